"""Base images named by build ARGs (`FROM ${BASE_IMAGE}`) and images whose tags say what they ship
(rlcompat/knowledge/data/environment.toml `[[docker.ships]]`): what the Dockerfile front end reads, and the table lookup."""

from __future__ import annotations

from rlcompat.knowledge.environment import shipped_by_image
from rlcompat.lang import dockerfile

IMAGE = "hiyouga/pytorch:th2.6.0-cu124-flashattn2.7.4-cxx11abi0-devel"


def _images(text: str):
    return [(i.image, i.tag, text[i.tag_span.start:i.tag_span.end], i.literal)
            for i in dockerfile.parse(text).group.images]


def test_a_reference_that_is_one_build_arg_is_read_where_the_arg_writes_it():
    text = f"ARG BASE_IMAGE={IMAGE}\nFROM ${{BASE_IMAGE}} AS train\n"
    assert _images(text) == [("hiyouga/pytorch", IMAGE.split(":")[1], IMAGE.split(":")[1], True)]
    assert _images(f'ARG BASE_IMAGE="{IMAGE}"\nFROM $BASE_IMAGE\n')[0][2:] == (IMAGE.split(":")[1], True)


def test_an_arg_without_a_value_or_a_partial_reference_keeps_the_from_line():
    assert _images("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n") == []
    text = 'ARG CUDA="13.0.1"\nFROM nvidia/cuda:${CUDA}-devel-ubuntu24.04\n'
    assert _images(text) == [("nvidia/cuda", "13.0.1-devel-ubuntu24.04", "nvidia/cuda:${CUDA}-devel-ubuntu24.04", False)]
    # an ARG whose value is built from another variable: not written out in one place
    assert _images("ARG TAG=1\nARG BASE=img:${TAG}\nFROM ${BASE}\n")[0][3] is False


def test_an_image_tag_names_what_it_ships_only_for_the_listed_image():
    (found,) = shipped_by_image("hiyouga/pytorch", IMAGE.split(":")[1])
    assert found[:2] == ("flash-attn", "2.7.4") and "README.md:109" in found[2]
    assert shipped_by_image("docker.io/hiyouga/pytorch", "th2.6.0-cu124-flashattn2.8.3-devel")[0][1] == "2.8.3"
    assert shipped_by_image("hiyouga/pytorch", "th2.6.0-cu124-cxx11abi0-devel") == []
    assert shipped_by_image("someone/pytorch", IMAGE.split(":")[1]) == []

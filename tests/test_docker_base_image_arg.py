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


def _rlc602(text: str, target: str = "sm61"):
    from rlcompat.api import scan_source
    from rlcompat.knowledge.targets import resolve_target
    return [(f.location.line, f.fix is not None) for f in scan_source(text, resolve_target(target), "Dockerfile",
                                                                      "dockerfile") if f.code == "RLC602"]


def test_a_tag_part_one_arg_writes_out_is_placed_at_that_arg():
    # axolotl 0.21.0's docker/Dockerfile-uv-base: the release is ARG CUDA_VERSION's value; the other ARGs of the tag
    # do not move it
    text = ('ARG CUDA_VERSION="13.0.3"\nARG CUDNN_VERSION=""\nARG UBUNTU_VERSION="24.04"\n\n'
            'FROM nvidia/cuda:$CUDA_VERSION-cudnn$CUDNN_VERSION-devel-ubuntu$UBUNTU_VERSION AS base-builder\n')
    (image,) = dockerfile.parse(text).group.images
    assert image.tag == "13.0.3-cudnn-devel-ubuntu24.04" and not image.literal
    at = image.written_at(0, len("13.0.3"))
    assert text[at.start:at.end] == "13.0.3" and text.count("\n", 0, at.start) == 0
    ubuntu = image.written_at(len("13.0.3-cudnn-devel-ubuntu"), len(image.tag))
    assert text[ubuntu.start:ubuntu.end] == "24.04"
    assert image.written_at(0, len("13.0.3-cudnn")) is None  # spans an ARG and the FROM line's own text
    assert _rlc602(text) == [(1, True)] and _rlc602(text, "sm75") == []
    # the release made of two ARGs is not written in one place: reported on the FROM reference, not retagged
    split = 'ARG MAJOR=13\nARG MINOR=0.1\nFROM nvidia/cuda:${MAJOR}.${MINOR}-devel-ubuntu24.04\n'
    assert _rlc602(split) == [(3, False)]


def test_an_image_whose_documented_tag_names_its_cuda_is_judged_by_it():
    # axolotl's docs/docker.qmd: `...-py{python}-cu{cuda}-{torch}`; the tag from ARG BASE_TAG is reported there
    text = "ARG BASE_TAG=main-py3.12-cu130-2.14.1\nFROM axolotlai/axolotl-cloud-uv:$BASE_TAG\n"
    assert _rlc602(text) == [(1, False)] and _rlc602(text, "sm75") == []
    assert _rlc602("FROM axolotlai/axolotl:0.18.0-py3.11-cu126-2.7.1\n") == []
    assert _rlc602("FROM axolotlai/axolotl-base:main-base-py3.12-cu130-2.13.0\n") == [(1, False)]
    assert _rlc602("FROM someone/axolotl:main-py3.12-cu130-2.14.1\n") == []  # not a documented image


def test_a_from_line_reads_the_global_args_not_an_earlier_stages():
    # Docker expands a FROM with the ARGs declared before the first FROM; `ARG CUDA=11.8` inside the builder stage
    # is that stage's, so the runtime stage's base is CUDA 13.0.1.
    text = ('ARG CUDA=13.0.1\nFROM nvidia/cuda:${CUDA}-devel-ubuntu24.04 AS builder\nARG CUDA=11.8.0\nRUN echo $CUDA\n'
            'FROM nvidia/cuda:${CUDA}-runtime-ubuntu24.04\n')
    assert [i.tag for i in dockerfile.parse(text).group.images] == ["13.0.1-devel-ubuntu24.04",
                                                                     "13.0.1-runtime-ubuntu24.04"]
    # an ARG first declared inside a stage is not known to a later FROM: the image is not read from it
    inside = 'FROM python:3.11 AS builder\nARG BASE=nvidia/cuda:11.8.0-devel-ubuntu22.04\nFROM ${BASE}\n'
    assert [i.image for i in dockerfile.parse(inside).group.images] == ["python"]

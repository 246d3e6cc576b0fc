"""The torch a framework's base image holds (rlcompat/knowledge/data/environment.toml `[[docker.torch_tag]]`), whether a
build stage installs its own, and FlashAttention source builds read as installs (`[[source_build]]`), each Dockerfile
RUN a new shell (rlcompat/knowledge/install_steps.py)."""

from __future__ import annotations

from rlcompat.knowledge.environment import torch_in_image
from rlcompat.knowledge.install_steps import dockerfile_steps, source_build, steps_in
from rlcompat.lang import dockerfile


def test_an_image_tag_names_the_index_and_the_release_whose_torch_pin_it_holds():
    torch, tag, where, _ = torch_in_image("slimerl/sglang", "v0.5.12.post1-cu129")
    assert (torch, tag, "v0.5.12.post1-cu129"[where[0]:where[1]]) == ("2.11.0", "cu129", "129")
    assert torch_in_image("docker.io/lmsysorg/sglang", "v0.5.9-cu129-amd64-runtime")[:2] == ("", "cu129")
    assert torch_in_image("verlai/verl", "base-verl0.6-cu128-cudnn9.8-torch2.8.0-fa2.7.4")[:2] == ("2.8.0", "cu128")


def test_an_untagged_cuda_is_known_only_for_the_releases_whose_default_was_read():
    assert torch_in_image("lmsysorg/sglang", "v0.5.6.post2")[1:3] == ("cu129", None)
    assert torch_in_image("lmsysorg/sglang", "v0.4.6.post1") is None  # an older default (CUDA 12.4) not in the row
    assert torch_in_image("lmsysorg/sglang", "latest") is None
    assert torch_in_image("verlai/verl", "app-verl0.6-transformers4.56.1-sglang0.5.2-mcore0.13.0-te2.2") is None


def test_a_stage_that_installs_torch_runs_its_own():
    text = ("FROM lmsysorg/sglang:v0.5.9-cu129 AS a\nRUN pip install torch-memory-saver\n"
            "FROM lmsysorg/sglang:v0.5.9-cu129 AS b\nRUN uv venv /v \\\n && uv pip install --index-url "
            "https://download.pytorch.org/whl/cu129 \\\n    \"torch==${V}+cu129\" torchaudio\n"
            "FROM lmsysorg/sglang:v0.5.9-cu129 AS c\nRUN python -c 'import torch' && conda install -y pytorch\n")
    assert [i.own_torch for i in dockerfile.parse(text).group.images] == [False, True, True]
    heredoc = "FROM lmsysorg/sglang:v0.5.9-cu129\nRUN <<EOF\nset -e\nuv pip install torch==2.9.1\nEOF\n"
    assert [i.own_torch for i in dockerfile.parse(heredoc).group.images] == [True]
    python = "FROM lmsysorg/sglang:v0.5.9-cu129\nRUN <<EOF python3\nprint('pip install torch')\nEOF\n"
    assert [i.own_torch for i in dockerfile.parse(python).group.images] == [False]


def test_each_run_starts_in_the_workdir_and_clones_stay():
    text = ("FROM python:3.11\n"
            "RUN git clone https://github.com/Dao-AILab/flash-attention.git && cd flash-attention/hopper\n"
            "RUN python setup.py install\n"
            "RUN cd flash-attention/hopper && MAX_JOBS=8 python3 setup.py install\n"
            "RUN cd flash-attention && pip install . --no-build-isolation\n")
    steps = [s for s in dockerfile_steps(text, "/t/Dockerfile", "/t") if s.kind == "project"]
    assert [(s.line, s.target, s.built) for s in steps] == [
        (3, "/t", ""),
        (4, "/t/flash-attention/hopper", "github.com/dao-ailab/flash-attention/hopper"),
        (5, "/t/flash-attention", "github.com/dao-ailab/flash-attention")]
    assert [source_build(s)[0] if source_build(s) else None for s in steps] == [None, "flash-attn-3", "flash-attn"]


def test_a_script_keeps_its_directory_across_lines():
    steps = steps_in("git clone https://github.com/Dao-AILab/flash-attention\ncd flash-attention/hopper\n"
                     "python setup.py develop\ncd ../../other && python setup.py build\n", "/t/install.sh", "/t")
    assert [(s.line, s.built) for s in steps] == [(3, "github.com/dao-ailab/flash-attention/hopper")]

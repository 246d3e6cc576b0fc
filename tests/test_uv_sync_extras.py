"""Extras a tree's own install step asks for (`uv sync --extra X`, `--all-extras` in its Dockerfile or install
script) are installed by default there: their requirements are judged as installed, in pyproject.toml and at the
`uv sync` command (prime-rl 0.7.0's Dockerfile.cuda:114 installs the flash-attn, flash-attn-3 and flash-attn-cute
extras)."""

from __future__ import annotations

from rlcompat.api import scan_paths
from rlcompat.knowledge import install_steps
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang.declared import ALL_EXTRAS, requirement_at, uv_sync_extras

WHEEL = "https://example.org/flash_attn-2.8.3+cu128torch2.11-cp312-cp312-linux_x86_64.whl"
PYPROJECT = ('[project]\nname = "x"\nversion = "0.1"\ndependencies = ["numpy"]\n\n[project.optional-dependencies]\n'
             f'flash-attn = [\n    "flash-attn @ {WHEEL} ; platform_machine == \'x86_64\'",\n]\n'
             'fa3 = ["flash_attn_3"]\n\n[build-system]\nrequires = ["hatchling"]\n')
DOCKERFILE = ("FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04\nRUN cd /tmp/ucx && make -j\"$(nproc)\"\n"
              "WORKDIR /app\nCOPY pyproject.toml /app/pyproject.toml\n"
              "RUN uv sync --extra flash-attn --extra fa3 --locked --no-dev\n")


def test_uv_sync_names_its_extras():
    assert uv_sync_extras(["uv", "sync", "--extra", "flash-attn", "--extra=FA3", "--locked"]) == ("flash-attn", "fa3")
    assert uv_sync_extras(["uv", "sync", "--all-extras"]) == (ALL_EXTRAS,)
    assert uv_sync_extras(["uv", "sync"]) == () and uv_sync_extras(["uv", "pip", "install", "x"]) is None


def test_a_direct_reference_with_a_marker_is_the_wheel_it_names():
    req = requirement_at(f"flash-attn @ {WHEEL} ; platform_machine == 'x86_64'", 0)
    assert (req.name, req.spec) == ("flash-attn", "==2.8.3+cu128torch2.11")


def test_a_dockerfile_s_uv_sync_installs_the_tree_s_project_even_after_a_cd_elsewhere(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    [step] = [s for s in install_steps.steps_in(DOCKERFILE, str(tmp_path / "Dockerfile"), str(tmp_path))
              if s.extras]
    assert (step.kind, step.target, step.line, step.extras) == ("project", str(tmp_path), 5, ("flash-attn", "fa3"))


def test_no_install_project_still_installs_the_project_s_requirements(tmp_path):
    # AReaL v1.0.4's Dockerfile:177 and NeMo-RL 0.4.0's docker/Dockerfile:97 install dependencies only
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    text = DOCKERFILE.replace("--no-dev\n", "--no-dev --no-install-project\n")
    [step] = [s for s in install_steps.steps_in(text, str(tmp_path / "Dockerfile"), str(tmp_path)) if s.extras]
    assert (step.kind, step.target, step.extras) == ("project", str(tmp_path), ("flash-attn", "fa3"))


def test_a_later_exact_sync_removes_what_an_earlier_sync_of_the_project_installed(tmp_path):
    # NeMo-RL 0.4.0's docker/Dockerfile:96-100: each extra synced to warm uv's cache, then the project without extras
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    warm = ("FROM base\nWORKDIR /app\nRUN <<EOF\nuv sync --locked --extra flash-attn --no-install-project\n"
            "uv sync --locked --extra fa3 --inexact --no-install-project\nuv sync --locked --no-install-project\n{}EOF\n")
    steps = install_steps.steps_in(warm.format(""), str(tmp_path / "Dockerfile"), str(tmp_path))
    assert [(s.line, s.extras) for s in steps] == [(6, ())]
    # an inexact sync after the last exact one adds to what it kept
    steps = install_steps.steps_in(warm.format("uv sync --inexact --extra fa3\n"), str(tmp_path / "Dockerfile"),
                                   str(tmp_path))
    assert [(s.line, s.extras) for s in steps] == [(6, ()), (7, ("fa3",))]
    # a later exact sync that asks for the same extras keeps them (prime-rl's builder and runtime stages)
    again = "FROM base\nWORKDIR /app\nRUN uv sync --extra fa3\nFROM base\nWORKDIR /app\nRUN uv sync --extra fa3\n"
    steps = install_steps.steps_in(again, str(tmp_path / "Dockerfile"), str(tmp_path))
    assert [(s.line, s.extras) for s in steps] == [(3, ("fa3",)), (6, ("fa3",))]


def test_extras_the_tree_installs_are_judged_as_installed_where_declared_and_at_the_sync(tmp_path):
    sm75 = resolve_target("sm75")
    alone, tree = tmp_path / "alone", tmp_path / "tree"
    for root in (alone, tree):
        (root / ".git").mkdir(parents=True)
        (root / "pyproject.toml").write_text(PYPROJECT)
    (tree / "Dockerfile").write_text(DOCKERFILE)
    # an optional extra's flash-attn selects nothing by being installed, nor does FlashAttention-3's (every build of
    # its hopper/setup.py asks for any torch [S361])
    found = scan_paths([str(alone / "pyproject.toml")], sm75).findings
    assert [f.location.line for f in found if f.code == "RLC603"] == []
    found = scan_paths([str(tree / "pyproject.toml"), str(tree / "Dockerfile")], sm75).findings
    where = sorted((f.path.rsplit("/", 1)[-1], f.location.line) for f in found if f.code == "RLC603")
    assert where == [("Dockerfile", 5), ("Dockerfile", 5), ("pyproject.toml", 8), ("pyproject.toml", 10)]
    assert any("installed by Dockerfile:5" in f.message for f in found if f.path.endswith("pyproject.toml"))


def test_a_torch_uv_routes_to_an_index_is_judged_at_its_route_not_at_the_sync(tmp_path):
    # AReaL v1.0.4's pyproject.toml:262-274: the cuda extra's torch, torchvision and torchaudio go to the cu129 index
    routed = ('[project]\nname = "x"\nversion = "0.1"\ndependencies = []\n\n[project.optional-dependencies]\n'
              'cuda = ["torch", "torchvision", "flash-attn==2.8.3"]\nplain = ["torchaudio"]\n\n'
              '[[tool.uv.index]]\nname = "cu129"\nurl = "https://download.pytorch.org/whl/cu129"\nexplicit = true\n\n'
              '[tool.uv.sources]\ntorch = [{ index = "cu129", extra = "cuda" }]\n'
              'torchvision = [{ index = "cu129", extra = "cuda" }]\n')
    (tmp_path / "pyproject.toml").write_text(routed)
    names = [r.name for r, _, _ in install_steps.extra_requirements(str(tmp_path), ("cuda", "plain"))]
    assert names == ["flash-attn", "torchaudio"]  # the plain extra's torchaudio is not routed: pip's reading holds

"""setup.py and setup.cfg as declared environments (rlcompat/lang/setup_deps.py): which strings `pip install .`
reaches, which only an extra does, and that the declared-environment rules report them where they are written."""

from __future__ import annotations

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang.setup_deps import parse, parse_setup_py

TRANSFORMERS_STYLE = '''import re
from setuptools import setup

_deps = [
    "accelerate>=0.26.0",
    "flash-attn>=2.5.0",
    "torch>=2.0",
    "vllm==0.9.1",
    "deepspeed>=0.14",
    "numpy",
]
deps = {b: a for a, b in (re.findall(r"^(([^!=<>~ ]+)(?:[!=<>~ ].*)?$)", x)[0] for x in _deps)}


def deps_list(*pkgs):
    return [deps[pkg] for pkg in pkgs]


extras = {}
extras["torch"] = deps_list("torch", "accelerate")
extras["vllm"] = deps_list("vllm")
install_requires = [deps["numpy"], deps["flash-attn"]]

setup(name="x", install_requires=install_requires, extras_require=extras, python_requires=">=3.9")
'''


def _reqs(group):
    return {(r.name, r.spec, r.extra) for r in group.requirements}


def test_a_deps_table_is_followed_to_the_strings_it_was_built_from():
    group = parse_setup_py(TRANSFORMERS_STYLE)
    assert _reqs(group) == {("numpy", "", ""), ("flash-attn", ">=2.5.0", ""), ("torch", ">=2.0", "torch"),
                            ("accelerate", ">=0.26.0", "torch"), ("vllm", "==0.9.1", "vllm")}
    # deepspeed is in the table but no install or extra selects it
    flash = group.requirement("flash-attn")
    assert TRANSFORMERS_STYLE[flash.span.start:flash.span.end] == "flash-attn>=2.5.0"
    assert TRANSFORMERS_STYLE[flash.spec_span.start:flash.spec_span.end] == ">=2.5.0"


def test_literal_lists_dicts_and_concatenation():
    text = ('from setuptools import setup\nBASE = ["torch==2.9.0"]\nsetup(\n    install_requires=BASE + ["vllm>=0.10"],\n'
            '    extras_require={"fast": ["flash-attn"], **dict(serve=["sglang[all]"])},\n)\n')
    assert _reqs(parse_setup_py(text)) == {("torch", "==2.9.0", ""), ("vllm", ">=0.10", ""), ("flash-attn", "", "fast"),
                                           ("sglang", "", "serve")}


def test_a_requirement_reached_by_install_requires_and_an_extra_is_installed_by_default():
    text = 'from setuptools import setup\nR = ["flash-attn"]\nsetup(install_requires=R, extras_require={"x": R})\n'
    assert _reqs(parse_setup_py(text)) == {("flash-attn", "", "")}


def test_strings_outside_the_setup_call_are_not_requirements():
    text = 'from setuptools import setup\nNOTES = ["flash-attn>=2.5"]\nsetup(name="x", install_requires=open("r.txt").read().split())\n'
    assert parse_setup_py(text).requirements == []


def test_setup_cfg_dangling_lists_extras_comments_and_markers():
    text = ("[metadata]\nname = y\ninstall_requires = flash-attn\n\n[options]\ninstall_requires =\n    torch==2.9.0\n"
            "    flash-attn>=2.5  # fast\n    numpy; python_version>\"3.8\"\n\n[options.extras_require]\n"
            "serve = vllm>=0.10\n")
    group = parse(text)
    assert _reqs(group) == {("torch", "==2.9.0", ""), ("flash-attn", ">=2.5", ""), ("numpy", "", ""),
                            ("vllm", ">=0.10", "serve")}
    torch = group.requirement("torch")
    assert text[torch.span.start:torch.span.end] == "torch==2.9.0"


def test_scan_reports_setup_py_and_setup_cfg_requirements_on_their_lines(tmp_path):
    (tmp_path / "setup.py").write_text(TRANSFORMERS_STYLE)
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    flash-attn>=2.5\n")
    # the same strings in a file that is not setup.py declare nothing
    (tmp_path / "notes.py").write_text('install_requires = ["flash-attn>=2.5"]\n')
    found = {(f.path.rsplit("/", 1)[-1], f.location.line, f.code)
             for f in scan_paths([str(tmp_path)], resolve_target("sm75")).findings}
    assert ("setup.py", 6, "RLC603") in found
    assert ("setup.cfg", 3, "RLC603") in found
    assert not any(name == "notes.py" for name, *_ in found)
    sm61 = {(f.path.rsplit("/", 1)[-1], f.location.line, f.code)
            for f in scan_paths([str(tmp_path)], resolve_target("sm61")).findings}
    # vllm==0.9.1 (extra vllm): no kernels below 7.0 (a release whose torch pin torch_wheels.toml does not hold; one it
    # holds, 0.8.5, is an install whose torch is judged, the engine left to where a run selects it: tests/test_declared)
    assert ("setup.py", 8, "RLC603") in sm61
    assert not any(name == "setup.py" and line == 9 for name, line, _ in sm61)  # deepspeed: selected by nothing


def test_a_setup_cfg_pin_is_part_of_the_trees_identity(tmp_path):
    from rlcompat.knowledge.declared_pins import pin_of

    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    trl==0.19.1\n    torch\n")
    pin = pin_of(str(tmp_path), "trl")
    assert (pin.version, pin.where) == ("0.19.1", "setup.cfg:3")



OPENRLHF_STYLE = '''from setuptools import setup


def _fetch_requirements(path):
    with open(path, "r") as fd:
        return [r.strip() for r in fd.readlines()]


setup(
    name="x",
    install_requires=_fetch_requirements("requirements.txt"),
    extras_require={
        "vllm": ["vllm==0.7.3"],
        "vllm_latest": ["vllm>0.7.3"],
    },
)
'''


def test_the_file_install_requires_reads_is_named_not_read_by_the_front_end():
    group = parse_setup_py(OPENRLHF_STYLE)
    assert group.core_files == ("requirements.txt",)
    assert {(r.name, r.spec) for r in group.requirements} == {("vllm", "==0.7.3"), ("vllm", ">0.7.3")}
    direct = 'from setuptools import setup\nreqs = open("req/core.txt").read().split()\nsetup(install_requires=reqs)\n'
    assert parse_setup_py(direct).core_files == ("req/core.txt",)
    # a helper that opens a file of its own, not its argument: that file, not the argument
    fixed = 'from setuptools import setup\ndef f(x):\n    return open("a.txt").read().split()\nsetup(install_requires=f("b.txt"))\n'
    assert parse_setup_py(fixed).core_files == ()
    assert parse_setup_py(TRANSFORMERS_STYLE).core_files == ()


def test_an_extras_engine_is_held_by_the_torch_the_core_requirements_file_pins(tmp_path):
    """OpenRLHF's setup.py reads install_requires from requirements.txt: with torch==2.5.1 there, `.[vllm_latest]`
    cannot take the newest vLLM's torch 2.14.0 (pip refuses the pair, or backtracks to a release that keeps 2.5.1);
    without a torch pin there, the newest vLLM's torch (PyPI's cu130 build) replaces the machine's."""
    (tmp_path / "setup.py").write_text(OPENRLHF_STYLE)
    sm61 = resolve_target("sm61")

    def found(requirements: str) -> set[tuple[int, str]]:
        (tmp_path / "requirements.txt").write_text(requirements)
        return {(f.location.line, f.code) for f in scan_paths([str(tmp_path / "setup.py")], sm61).findings}

    assert (14, "RLC601") not in found("transformers\ntorch==2.5.1\n")
    assert (14, "RLC601") in found("transformers\ntorch\n")
    # vllm 0.7.3 pins torch 2.5.1, whose PyPI build (cu124) runs on sm61; the engine is reported where a config
    # selects it
    assert not {f for f in found("torch\n") if f[0] == 13}


MARTI_STYLE = OPENRLHF_STYLE.replace('"vllm==0.7.3"', '"vllm==0.8.5.post1"').replace('"vllm>0.7.3"', '"vllm>0.8.5.post1"')


def test_an_extras_engine_beside_the_core_files_torch_pin_takes_a_release_that_pins_that_torch(tmp_path):
    """MARTI 7f7fe49: requirements.txt pins torch==2.9 and lists vllm>0.8.5.post1, which pip resolves to a vLLM that
    pins torch 2.9.0 (0.13.0, [S360]), PyPI's cu128 build without sm_60/61. The requirements file reports it; the
    `vllm_latest` extra repeating that requirement adds nothing to the install and is not reported again; without
    the core file's vllm line the extra is the one that brings it. `vllm==0.8.5.post1` pins torch 2.6.0, which
    torch==2.9 refuses on every card: nothing to report for the card."""
    (tmp_path / "setup.py").write_text(MARTI_STYLE)
    sm61 = resolve_target("sm61")

    def found(requirements: str) -> set[tuple[str, int]]:
        (tmp_path / "requirements.txt").write_text(requirements)
        return {(f.path.rsplit("/", 1)[-1], f.location.line)
                for f in scan_paths([str(tmp_path)], sm61).findings if f.code == "RLC601"}

    both = found("torch==2.9\nvllm>0.8.5.post1\n")
    assert ("requirements.txt", 2) in both
    assert ("setup.py", 14) not in both and ("setup.py", 13) not in both
    alone = found("torch==2.9\n")
    assert ("setup.py", 14) in alone and ("setup.py", 13) not in alone
    # torch 2.7.1 (PyPI's cu126 build, which vLLM 0.10.x pins) runs on sm61
    assert not {f for f in found("torch==2.7.1\nvllm>0.8.5.post1\n") if f[0] == "setup.py" or f[1] == 2}

"""vllm-pascal, the community's Pascal builds of vLLM (rlcompat/knowledge/vllm_pascal.py): which verl release rolls
out with which build, and that RLC401 and doctor name a build there and nowhere else."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from rlcompat.cli.app import app
from rlcompat.doctor import environment
from rlcompat.doctor.snapshot import Environment, Package, TorchBuild
from rlcompat.knowledge import files, versions, vllm_pascal
from rlcompat.knowledge.files import KnowledgeFileError
from rlcompat.knowledge.targets import resolve_target
from tests.doctor_fakes import P40, FakeNvml

KNOWN_VERL = sorted(files.names("verl"), key=versions.release)
# What the sources say (S95-S98): a release whose default rollout builds vllm.LLM (V0) pairs with the newest published
# build in its vLLM range; one that needs V1's AsyncLLM pairs with none (no build reaches vLLM 0.10.2).
EXPECTED = {"0.4.1": "0.8.5", "0.5.0": "0.8.5", "0.6.1": "0.9.1", "0.7.0": None, "0.8.0": None, "0.9.1": None}
CMD = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.name={name} \\\n    trainer.n_gpus_per_node=1\n"


def test_every_verl_release_rlcompat_knows_is_decided():
    assert sorted((p.verl for p in vllm_pascal.table().pairings), key=versions.release) == KNOWN_VERL
    assert sorted(EXPECTED, key=versions.release) == KNOWN_VERL


@pytest.mark.parametrize("spec", ["sm60", "sm61"])
def test_pascal_cards_get_the_newest_build_in_the_release_range(spec):
    target = resolve_target(spec)
    got = {v: (b.version if (b := vllm_pascal.usable_build(v, target)) else None) for v in KNOWN_VERL}
    assert got == EXPECTED
    assert sorted(vllm_pascal.served_releases(), key=versions.release) == [v for v in KNOWN_VERL if EXPECTED[v]]


@pytest.mark.parametrize("spec", ["sm52", "sm70", "sm75", "sm80"])
def test_no_build_elsewhere(spec):
    # sm70/sm75: vLLM's own releases run there; sm52 and the rest: the builds carry sm60/sm61 kernels only
    target = resolve_target(spec)
    assert all(vllm_pascal.usable_build(v, target) is None for v in KNOWN_VERL)
    assert vllm_pascal.advice("0.6.1", target, "float32", "actor_rollout_ref.rollout.dtype") is None


def test_unknown_release_and_unpublished_builds_are_never_named():
    sm61 = resolve_target("sm61")
    assert vllm_pascal.usable_build("0.6.0", sm61) is None  # no pairing read for it
    published = {b.version for b in vllm_pascal.table().builds if b.published}
    assert "0.10.0" not in published and "0.9.2" not in published


def test_ranges_follow_pep440_post_releases():
    assert vllm_pascal.in_range("0.8.5", ">=0.7.3,<=0.8.5")
    assert not vllm_pascal.in_range("0.8.5.post1", ">=0.7.3,<=0.8.5")  # 0.8.5.post1 > 0.8.5
    assert vllm_pascal.in_range("0.8.5.post1", ">=0.8.5,<=0.11.0")
    assert not vllm_pascal.in_range("0.7.2", ">=0.7.3")


def test_a_v1_release_would_take_a_build_from_vllm_0_10_2(monkeypatch):
    data = files.load("vllm_pascal.toml")
    data = {**data, "build": [*data["build"], {"versions": ["0.10.2"], "published": True}]}
    monkeypatch.setattr(vllm_pascal.files, "load", lambda *parts: data)
    vllm_pascal.table.cache_clear()
    try:
        sm61 = resolve_target("sm61")
        assert vllm_pascal.usable_build("0.8.0", sm61).version == "0.10.2"  # V1 below 8.0 from 0.10.2
        assert vllm_pascal.usable_build("0.6.1", sm61).version == "0.10.2"  # in its range, and V0 or V1 serves it
        assert vllm_pascal.usable_build("0.9.1", sm61) is None  # vllm>=0.18.0
    finally:
        vllm_pascal.table.cache_clear()


def test_a_malformed_row_is_a_one_line_error(monkeypatch):
    data = files.load("vllm_pascal.toml")
    bad = {**data, "verl": [{**data["verl"][0], "engine": "v2"}]}
    monkeypatch.setattr(vllm_pascal.files, "load", lambda *parts: bad)
    vllm_pascal.table.cache_clear()
    try:
        with pytest.raises(KnowledgeFileError, match=r"vllm_pascal\.toml: verl 0\.4\.1: engine 'v2'"):
            vllm_pascal.table()
    finally:
        vllm_pascal.table.cache_clear()


def test_every_cited_source_resolves():
    from rlcompat.knowledge.targets import sources

    assert set(files.load("vllm_pascal.toml")["sources"]) <= set(sources())


def _rlc401(run_cli, tmp_path, verl: str | None, target: str, name: str = "vllm") -> list[str]:
    (tmp_path / "run.sh").write_text(CMD.format(name=name))
    if verl:
        (tmp_path / "requirements.txt").write_text(f"verl=={verl}\n")
    code, out, err = run_cli("scan", str(tmp_path / "run.sh"), "--target", target, "--select", "RLC401",
                             "--output-format", "json", "--no-cache", env={"RLCOMPAT_HF_ROLLOUT": "0"})
    assert code in (0, 1), err
    return [f["message"] for f in json.loads(out)["findings"]]


def test_rlc401_names_the_build_where_a_release_rolls_out_with_one(run_cli, tmp_path):
    [msg] = _rlc401(run_cli, tmp_path, "0.6.1", "sm61")
    assert "vllm-pascal 0.9.1 is a community build of vLLM for Pascal, not vLLM's own" in msg
    assert "pip install vllm-pascal==0.9.1 --extra-index-url https://sasha0552.github.io/pascal-pkgs-ci/" in msg
    assert "actor_rollout_ref.rollout.dtype=float32" in msg and "torch 2.7.0" in msg
    # where verl registers an engine that runs (its own hf), the build comes after it
    [msg] = _rlc401(run_cli, tmp_path, "0.4.1", "sm61", name="sglang")
    assert "use hf (actor_rollout_ref.rollout.name=hf); or roll out with vLLM (actor_rollout_ref.rollout.name=vllm)" in msg
    assert "vllm-pascal 0.8.5" in msg


@pytest.mark.parametrize("verl,target", [("0.8.0", "sm61"), ("0.9.1", "sm61"), ("0.7.0", "sm60"), ("0.9.1", "sm70"),
                                         ("0.6.1", "sm52"), (None, "sm61")])
def test_rlc401_says_nothing_of_it_elsewhere(run_cli, tmp_path, verl, target):
    [msg] = _rlc401(run_cli, tmp_path, verl, target)
    assert "vllm-pascal" not in msg


def test_rlc401_judges_the_vllm_a_release_pins_on_a_v100(run_cli, tmp_path):
    # vLLM dropped sm70 in 0.20.0; verl 0.6.1 declares vllm<=0.11.0, so its rollout runs on a V100, while verl
    # 0.9.1 declares vllm>=0.18.0 without a ceiling and a fresh install gets a vLLM that refuses the card
    assert _rlc401(run_cli, tmp_path, "0.6.1", "sm70") == []
    [msg] = _rlc401(run_cli, tmp_path, "0.9.1", "sm70")
    assert "vllm cannot run on sm70" in msg


@pytest.fixture
def doctor(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)

    def run(verl: str, *args, extra=()):
        nvml = FakeNvml([P40])
        gpus, problem, total = environment.read_machine(nvml, env={})
        torch = TorchBuild("2.7.0+cu126", "12.6", arches=("sm_50", "sm_60", "sm_70"))
        pkgs = {"verl": Package("verl", verl, f"/venv/verl-{verl}.dist-info/METADATA"),
                "torch": Package("torch", torch.version, "/venv/torch.dist-info/METADATA")}
        pkgs.update({n: Package(n, v, f"/venv/{n}-{v}.dist-info/METADATA") for n, v in extra})
        machine = Environment(gpus=gpus, gpu_problem=problem, all_gpus=total, packages=pkgs, torch=torch, nvcc=None,
                              python="3.12.3 at /venv/bin/python")
        monkeypatch.setattr(environment, "collect", lambda *a, **k: machine)
        result = CliRunner().invoke(app, ["doctor", *args], env={"NO_COLOR": "1"})
        return result.stdout

    return run


def test_doctor_names_the_build_for_the_installed_release(doctor):
    text = doctor("0.6.1")
    [line] = [ln for ln in text.splitlines() if ln.startswith("Rollout:")]
    assert line.startswith("Rollout: verl 0.6.1 registers no rollout engine that runs on sm61")
    assert "or roll out with vLLM (actor_rollout_ref.rollout.name=vllm): vllm-pascal 0.9.1 is a community build" in line
    doc = json.loads(doctor("0.6.1", "--output-format", "json"))
    assert doc["rollout"]["vllm_pascal"].startswith("vllm-pascal 0.9.1 ")
    assert doc["rollout"]["override"] == "actor_rollout_ref.rollout.name=vllm"  # 0.6.1 registers no hf rollout
    doc = json.loads(doctor("0.5.0", "--output-format", "json"))
    assert doc["rollout"]["override"] == "actor_rollout_ref.rollout.name=hf"  # verl 0.5.0's own hf rollout
    assert "verl 0.5.0's own hf rollout runs on sm61" in doc["rollout"]["advice"]
    assert doc["rollout"]["vllm_pascal"].startswith("vllm-pascal 0.8.5 ")


@pytest.mark.parametrize("verl", ["0.8.0", "0.6.0"])
def test_doctor_says_nothing_of_it_where_no_build_serves(doctor, verl):
    text = doctor(verl)
    assert "vllm-pascal" not in text and "Rollout:" not in text
    assert json.loads(doctor(verl, "--output-format", "json"))["rollout"] is None


def test_doctor_on_a_newer_card_says_nothing_of_it(doctor):
    text = doctor("0.6.1", "--target", "sm75")
    assert "vllm-pascal" not in text


def test_doctor_takes_vllm_pascals_stand_in_for_what_it_is(doctor):
    def rlc506(*args, extra):
        doc = json.loads(doctor("0.6.1", "--output-format", "json", *args, extra=extra))
        return [f for f in doc["findings"] if f["code"] == "RLC506"]

    assert rlc506(extra=[("vllm", "0.9.1")])  # vLLM's own 0.9.1 has no kernels for a P40
    assert rlc506(extra=[("vllm", "0.9.1"), ("vllm-pascal", "0.9.1")]) == []  # the stand-in of a Pascal build
    # judged for a newer card, the Pascal build's kernels are not its: vLLM 0.20.0 leaves sm70 out
    assert rlc506("--target", "sm70", extra=[("vllm", "0.20.0"), ("vllm-pascal", "0.9.1")])

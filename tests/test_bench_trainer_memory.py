"""bench/trainer_memory.py: the plot of a `verify --trainer` record names the GPU the record says it ran on."""

from __future__ import annotations

import json

import pytest

from tests.bench_module import load_bench

tm = load_bench("trainer_memory.py", "bench_trainer_memory")

ROWS = [{"step": 1, "actor_peak_alloc_gb": 14.79, "rollout_peak_alloc_gb": 2.39, "gpu_used_peak_gb": None},
        {"step": 2, "actor_peak_alloc_gb": 14.79, "rollout_peak_alloc_gb": 2.37, "gpu_used_peak_gb": 19.97}]


@pytest.fixture
def titles(monkeypatch):
    seen = []
    monkeypatch.setattr(tm, "plot", lambda rows, path, title: seen.append((len(rows), title)) or True)
    return seen


def test_a_csv_is_read_back_as_written(tmp_path):
    tm.write_csv(ROWS, tmp_path / "steps.csv")
    assert tm.rows_from_csv(tmp_path / "steps.csv") == ROWS


def test_the_title_names_the_gpu_of_environment_txt_beside_the_csv(tmp_path, titles):
    record = tmp_path / "record"
    record.mkdir()
    tm.write_csv(ROWS, record / "trainer_memory_big.csv")
    (record / "environment.txt").write_text("NVIDIA H200, 9.0, 580.159.04, 143771 MiB\npython 3.12.3 | torch 2.11.0\n")
    before = (record / "trainer_memory_big.csv").read_bytes()
    assert tm.main([str(record / "trainer_memory_big.csv"), "--out", str(tmp_path / "out"), "--name", "plot"]) == 0
    assert titles == [(2, "verl main_ppo with the hf rollout on one NVIDIA H200: memory per step")]
    assert not (tmp_path / "out" / "plot.csv").exists()  # a CSV input is not written again
    assert (record / "trainer_memory_big.csv").read_bytes() == before


def test_the_result_s_own_device_name_wins_and_device_overrides_both(tmp_path, titles):
    result = {"device": {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3"}, "steps": [], "rollout_servers": []}
    (tmp_path / "big.json").write_text(json.dumps(result))
    (tmp_path / "environment.txt").write_text("NVIDIA H200, 9.0, 580.159.04, 143771 MiB\n")
    tm.main([str(tmp_path / "big.json"), "--out", str(tmp_path / "out")])
    tm.main([str(tmp_path / "big.json"), "--out", str(tmp_path / "out"), "--device", "Tesla P40"])
    assert [t for _, t in titles] == ["verl main_ppo with the hf rollout on one NVIDIA H100 80GB HBM3: memory per step",
                                      "verl main_ppo with the hf rollout on one Tesla P40: memory per step"]


def test_a_record_that_names_no_gpu_is_refused_rather_than_guessed(tmp_path, titles, capsys):
    tm.write_csv(ROWS, tmp_path / "steps.csv")
    with pytest.raises(SystemExit) as exc:
        tm.main([str(tmp_path / "steps.csv"), "--out", str(tmp_path / "out")])
    assert exc.value.code == 2 and "pass --device or --title" in capsys.readouterr().err
    assert titles == []

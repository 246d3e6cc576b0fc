"""Worker processes: every file is checked once, results come back in input order and equal a serial run."""

from __future__ import annotations

from rlcompat.api import scan_paths
from rlcompat.config import Options
from rlcompat.pipeline.runner import task_batches
from rlcompat.knowledge.targets import resolve_target


def test_tasks_cover_every_file_once_biggest_first(tmp_path):
    sizes = [5, 900, 40, 0, 300, 7, 7, 2000, 1, 60] * 5
    items = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"f{i}.py"
        path.write_text("x" * size)
        items.append((str(path), "python"))
    items.append((str(tmp_path / "missing.py"), "python"))  # vanished since discovery: the worker reports it
    tasks = task_batches(items, jobs=2)
    indices = [i for task, _ in tasks for i in task]
    assert sorted(indices) == list(range(len(items)))
    assert all([items[i] for i in task] == task_items for task, task_items in tasks)
    assert sizes[tasks[0][0][0]] == max(sizes)
    task_bytes = [sum(sizes[i] if i < len(sizes) else 0 for i in task) for task, _ in tasks]
    assert task_bytes[-1] <= task_bytes[0]  # small tasks last, so the workers finish together
    assert 1 < len(tasks) < len(items)


def test_parallel_scan_equals_serial_scan(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(40):
        body = "import torch\n" + "".join(f"x{j} = torch.zeros(2, dtype=torch.bfloat16)\n" for j in range(i % 5))
        (src / f"m{i:02d}.py").write_text(body + "y = 1\n" * (i * 20))
    target = resolve_target("sm61")
    serial = scan_paths([str(src)], target, Options(root=str(tmp_path)), jobs=1)
    parallel = scan_paths([str(src)], target, Options(root=str(tmp_path)), jobs=2)
    assert [r.path for r in parallel.results] == sorted(r.path for r in parallel.results)
    assert [(f.path, f.location, f.code) for f in parallel.findings] == [(f.path, f.location, f.code) for f in serial.findings]
    assert len(serial.findings) == sum(i % 5 for i in range(40))

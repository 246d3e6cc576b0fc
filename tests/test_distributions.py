"""knowledge/distributions.py gives what importlib.metadata.version gives, without importing it."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from rlcompat.knowledge import distributions


def _expected(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_every_installed_distribution_and_its_spellings():
    names = sorted({d.metadata["Name"] for d in metadata.distributions() if d.metadata["Name"]})
    assert len(names) > 20  # the test environment's own: libcst, typer, ...
    for name in names:
        for spelling in {name, name.upper(), name.replace("-", "_"), name.replace("_", "-"), name.replace("-", ".")}:
            assert distributions.version(spelling) == _expected(spelling), spelling
    for missing in ("no-such-distribution-rlcompat", "verl_", "-"):
        assert distributions.version(missing) is None and _expected(missing) is None


def _dist(site, folder: str, metadata_name: str | None, text: str) -> None:
    info = site / folder
    info.mkdir()
    if metadata_name:
        (info / metadata_name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("folder, metadata_name, text, flash_attn", [
    ("Flash_Attn-2.8.3.dist-info", "METADATA", "Metadata-Version: 2.1\nName: flash_attn\nVersion: 2.8.3\n\nbody\n", "'2.8.3'"),
    ("flash_attn-2.8.3.dist-info", "METADATA", "Name: flash-attn\nversion:   2.8.3 \r\nSummary: x\n", "'2.8.3 '"),  # any case
    ("flash_attn-1.0.egg-info", "PKG-INFO", "Name: flash-attn\nVersion: 1.0\n", "'1.0'"),  # setup.py develop's egg-info
    ("flash_attn-1.0.dist-info", "METADATA", "Name: flash-attn\nSummary: no version here\n\nVersion: 9\n", "None"),
    ("flash_attn-1.0.dist-info", "METADATA", "Name: flash-attn\nVersion: 1.0\n  .post1\n", "'      1.0\\n.post1'"),  # folded
    ("flash_attn-1.0.dist-info", "METADATA", "Name: flash-attn\nNot a header\nVersion: 1.0\n", "None"),  # handed over
    ("flash_attn-1.0.dist-info", None, "", "None"),  # no metadata at all: handed over
    ("flash.attn-3.dist-info", "METADATA", "Version: 3\n", "'3'"),
])
def test_made_up_layouts_as_importlib_metadata_reads_them(tmp_path, folder, metadata_name, text, flash_attn):
    site = tmp_path / "site"
    site.mkdir()
    _dist(site, folder, metadata_name, text)
    (tmp_path / "not-a-dir.zip").write_bytes(b"")
    probe = (
        "import sys, warnings; warnings.simplefilter('ignore')\n"
        "from importlib import metadata\n"
        "from rlcompat.knowledge import distributions\n"
        "def exp(n):\n"
        "    try: return metadata.version(n)\n"
        "    except metadata.PackageNotFoundError: return None\n"
        "for n in ('flash-attn', 'flash_attn', 'FLASH.ATTN', 'flash'):\n"
        "    print(n, repr(distributions.version(n)), repr(exp(n)), sep='\\t')\n"
    )
    # a fresh interpreter whose path holds the made-up site first, then a missing entry and a file that is no zip
    # (as sys.path may: the reader hands a look-up that reaches the file to importlib.metadata)
    entries = [str(site), str(tmp_path / "gone"), str(tmp_path / "not-a-dir.zip")]
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path[:0] = {entries!r}\n" + probe],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) == 4
    for name, mine, theirs in rows:
        assert mine == theirs, (name, mine, theirs)
    assert rows[0] == ["flash-attn", flash_attn, flash_attn]


def test_a_zip_on_the_path_is_handed_to_importlib_metadata(tmp_path, monkeypatch):
    import zipfile

    archive = tmp_path / "dists.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped_dist-1.2.dist-info/METADATA", "Name: zipped-dist\nVersion: 1.2\n")
    monkeypatch.syspath_prepend(str(archive))
    assert distributions.version("zipped-dist") == _expected("zipped-dist") == "1.2"


def test_a_scan_does_not_import_importlib_metadata(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nx = t.to(torch.bfloat16)\n", encoding="utf-8")
    code = ("import sys\nfrom rlcompat.cli import main\nsys.argv = ['rlcompat', 'scan', sys.argv[1], '--target', 'sm61', "
            "'--no-cache']\ntry:\n    main()\nexcept SystemExit:\n    pass\nprint('importlib.metadata' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "train.py")], capture_output=True, text=True,
                         cwd=tmp_path).stdout
    assert "RLC101" in out and out.strip().splitlines()[-1] == "False"

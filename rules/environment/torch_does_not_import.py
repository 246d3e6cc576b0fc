from __future__ import annotations

from rlcompat.knowledge import torch_wheels, versions
from rlcompat.contract import Bad, EnvironmentRule, Good


class TorchDoesNotImport(EnvironmentRule):
    code = "RLC514"
    name = "torch-does-not-import"
    title = "The installed torch fails to import"
    what = (
        "Reports a torch distribution that is installed but whose `import torch` fails in a child interpreter (a "
        "missing CUDA library, an ABI clash with another package). A probe that only timed out is not reported."
    )
    why = (
        "Every training run imports torch first; the doctor asks torch for its build in a subprocess [S46], and when "
        "that import fails everything after it fails the same way, whatever the card."
    )
    fix_safety = "No autofix: reinstall torch (and its nvidia-* CUDA libraries) from one index, in a clean environment."
    sources = ("S46",)
    prevents = ("X7",)

    bad = (Bad('[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\narches_from = "table"\n'
               'problem = "`import torch` failed: ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"\n',
               path="env.toml"),)
    good = (
        Good('[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\narches = ["sm_60"]\n', path="env.toml"),
        Good('[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\narches_from = "table"\nproblem = "`import torch` took longer than 120 s"\n',
             path="env.toml"),
    )

    def check(self, env):
        torch = env.torch
        prefix = "`import torch` failed: "
        if torch is None or not (torch.problem or "").startswith(prefix):
            return []
        detail = torch.problem[len(prefix):]
        return [self.finding(
            f"torch {torch.version} is installed but `import torch` fails", error="X7", detail=detail,
            package=env.package("torch"),
            remedy=f"reinstall it: pip install --force-reinstall 'torch=={torch.version}'{_index(torch.version)}")]


def _index(version: str) -> str:
    tag = versions.local_tag(version)
    return f" --index-url {torch_wheels.index_url(tag)}" if tag and tag.startswith(("cu", "cpu", "rocm")) else ""

from __future__ import annotations

import re
from rlcompat.knowledge import torch_wheels, versions
from rlcompat.knowledge.environment import environment_facts
from rlcompat.contract import (
    Bad, Declared, declared_language, DeclaredRule, Edit, FixSafety, from_command, Good, GroupView, Span, Variable,
)

# Names torch.utils.cpp_extension accepts in TORCH_CUDA_ARCH_LIST, and the capabilities they stand for [S57].
NAMED = {"kepler": "3.5+PTX", "maxwell": "5.0;5.2+PTX", "pascal": "6.0;6.1+PTX", "volta": "7.0+PTX",
         "turing": "7.5+PTX", "ampere": "8.0;8.6+PTX", "ada": "8.9+PTX", "hopper": "9.0+PTX",
         "blackwell": "10.0;10.3;12.0;12.1+PTX"}
ENTRY = re.compile(r"^(\d+)\.(\d+)([af]?)(\+PTX)?$", re.IGNORECASE)
# A script's `export TORCH_CUDA_ARCH_LIST=...` / `TORCH_CUDA_ARCH_LIST=... pip install ...`.
SHELL_SETTING = re.compile(r"""\bTORCH_CUDA_ARCH_LIST=(?:"(?P<dq>[^"$]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"'$;&|]+))""")


def entries(value: str) -> list[tuple[tuple[int, int], bool]]:
    """("6.1;7.0+PTX") -> [((6, 1), False), ((7, 0), True)]: capability and whether PTX is embedded."""
    out = []
    words = re.split(r"[;\s]+", value.strip())
    for word in [w for word in words for w in NAMED.get(word.lower(), word).split(";")]:
        m = ENTRY.match(word)
        if m:
            out.append(((int(m.group(1)), int(m.group(2))), bool(m.group(4))))
    return out


class TorchCudaArchList(DeclaredRule):
    code = "RLC604"
    name = "torch-cuda-arch-list"
    title = "TORCH_CUDA_ARCH_LIST leaves out the target GPU, or names archs the declared CUDA cannot compile"
    what = (
        "Reads `TORCH_CUDA_ARCH_LIST` set by `ENV`/`ARG` in a Dockerfile, and in scripts the last value set before "
        "a `pip install` (the list extensions such as flash-attn, apex or DeepSpeed ops are compiled for). Reports "
        "a list with no entry that runs on the target, and entries below 7.5 under a CUDA 13 base image."
    )
    why = (
        "An extension built for other architectures has no code for the card: `no kernel image is available` at its "
        "first call [S34]; a cubin runs only on its own major version, PTX on equal or newer capabilities [S1]. "
        "CUDA 13 cannot compile for capability < 7.5 and stops the build with `nvcc fatal : Unsupported gpu "
        "architecture 'compute_70'` [S27][S48]."
    )
    fix_safety = (
        "Appending the target's capability only adds code (a longer build): safe, except below 7.5 when the file "
        "does not say its CUDA (a CUDA 13 image would then stop at the new entry): unsafe. Entries below 7.5 under CUDA 13 "
        "are removed only when the target is 7.5+ (safe: no card this image can serve uses them); for an older "
        "target the base image is what must change (RLC602)."
    )
    names = ("TORCH_CUDA_ARCH_LIST",)
    sources = ("S1", "S27", "S34", "S48", "S57")
    prevents = ("X2", "E1")
    languages = frozenset({"dockerfile", "shell", "markdown", "python"})  # python: a setup.py (DeclaredRule)

    bad = (
        Bad('FROM nvidia/cuda:12.6.3-devel-ubuntu22.04\nENV TORCH_CUDA_ARCH_LIST="8.0;8.6;9.0"\n', path="Dockerfile",
            fixed='FROM nvidia/cuda:12.6.3-devel-ubuntu22.04\nENV TORCH_CUDA_ARCH_LIST="8.0;8.6;9.0;6.1"\n'),
        Bad('FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\nENV TORCH_CUDA_ARCH_LIST="7.0;7.5;8.0;8.6"\n',
            path="Dockerfile", target="sm86", fixed='FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\nENV TORCH_CUDA_ARCH_LIST="7.5;8.0;8.6"\n'),
        Bad('FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\nARG TORCH_CUDA_ARCH_LIST="6.1 7.0"\n', path="Dockerfile"),
        Bad('ARG CUDA=13.0.1\nFROM nvidia/cuda:${CUDA}-devel-ubuntu24.04\nENV TORCH_CUDA_ARCH_LIST="8.0;9.0"\n',
            path="Dockerfile"),
        Bad('export TORCH_CUDA_ARCH_LIST="8.0;9.0"\nMAX_JOBS=4 pip install flash-attn --no-build-isolation\n',
            path="build.sh", target="sm75",
            fixed='export TORCH_CUDA_ARCH_LIST="8.0;9.0;7.5"\nMAX_JOBS=4 pip install flash-attn --no-build-isolation\n'),
        Bad('ARG TORCH_CUDA_ARCH_LIST="9.0 10.0+PTX"\nENV TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST\n',
            path="Dockerfile", target="sm86", fixed='ARG TORCH_CUDA_ARCH_LIST="9.0 10.0+PTX 8.6"\n'
            'ENV TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST\n'),
        # one list per stage: the first stage's leaves out 6.1 as well as the second's
        Bad('FROM nvidia/cuda:12.6.3-devel-ubuntu22.04 AS base\nENV TORCH_CUDA_ARCH_LIST="7.5 8.0"\n'
            'FROM base AS ep\nARG TORCH_CUDA_ARCH_LIST="9.0"\n', path="Dockerfile",
            fixed='FROM nvidia/cuda:12.6.3-devel-ubuntu22.04 AS base\nENV TORCH_CUDA_ARCH_LIST="7.5 8.0 6.1"\n'
            'FROM base AS ep\nARG TORCH_CUDA_ARCH_LIST="9.0;6.1"\n'),
    )
    good = (
        Good('FROM nvidia/cuda:12.6.3-devel-ubuntu22.04\nENV TORCH_CUDA_ARCH_LIST="6.1;7.0;8.0"\n', path="Dockerfile"),
        Good('export TORCH_CUDA_ARCH_LIST="8.0;9.0"\necho built\n', path="build.sh"),
        Good('ENV TORCH_CUDA_ARCH_LIST="Pascal;Volta"\n', path="Dockerfile"),
        Good('ENV TORCH_CUDA_ARCH_LIST="7.0;8.0+PTX"\n', path="Dockerfile", target="sm89"),
        Good('FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\nENV TORCH_CUDA_ARCH_LIST="7.5;8.0;8.6"\n', path="Dockerfile",
             target="sm86"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def check_config(self, view, ctx) -> None:
        if isinstance(view, GroupView):
            self.check_declared(view.group, ctx)
            return
        # Scripts: the value in force when a `pip install` builds an extension. (A Dockerfile's RUN commands see
        # its ENV/ARG lines too, but the file's group, which knows the base image's CUDA, judges those.)
        if declared_language(ctx.path) == "dockerfile" or from_command(view, ctx.source_text) is None \
                or not view.word_spans:
            return
        settings = list(SHELL_SETTING.finditer(ctx.source_text, 0, view.word_spans[0].start))
        if settings:
            m = settings[-1]
            which = next(k for k in ("dq", "sq", "bare") if m.group(k) is not None)
            span = Span(m.start(which), m.end(which))
            self.check_declared(Declared("command", variables=[Variable("TORCH_CUDA_ARCH_LIST", m.group(which), span)]),
                                ctx)

    def check_declared(self, group, ctx) -> None:
        # Every list the file sets: a multi-stage Dockerfile sets one per stage (xtuner v1.0.0rc0's Dockerfile:35 for
        # the stages built on setup_env, :110 for its DeepEP stage), each the list that stage's builds compile for.
        for variable in group.variables:
            if variable.name == "TORCH_CUDA_ARCH_LIST":
                self._check_list(variable, group, ctx)

    def _check_list(self, variable, group, ctx) -> None:
        listed = entries(variable.value)
        if not listed:
            return
        cc = self.target.capability
        limit = environment_facts()["nvcc"]["cannot_target_below"]
        floor = versions.capability(limit["capability"])
        cuda = group.cuda
        too_old = [e for e in listed if e[0] < floor] if cuda and not torch_wheels.cuda_below(cuda, limit["cuda"]) else []
        runs = any(c == cc or (c[0] == cc[0] and c[1] <= cc[1]) or (ptx and c <= cc) for c, ptx in listed)
        if too_old:
            names = ", ".join(versions.capability_text(c) for c, _ in too_old)
            edit = self._without(variable, too_old) if cc >= floor else None
            ctx.report(variable.span, f"TORCH_CUDA_ARCH_LIST names {names}, which CUDA {cuda} cannot compile "
                                      f"(`nvcc fatal : Unsupported gpu architecture 'compute_{too_old[0][0][0]}"
                                      f"{too_old[0][0][1]}'`)" + ("" if edit else f"; {self.target.name} needs a CUDA "
                                                                  f"12 base image (RLC602)"),
                       [edit], FixSafety.SAFE, f"drop {names}")
            return
        if not runs and cuda and not torch_wheels.cuda_below(cuda, limit["cuda"]) and cc < floor:
            ctx.report(variable.span, f"TORCH_CUDA_ARCH_LIST has no entry that runs on {self.target.name} "
                                      f"({self.target.capability_text}), and CUDA {cuda} cannot compile for it: the "
                                      f"base image has to change first (RLC602)", [None])
        elif not runs:
            sep = ";" if ";" in variable.value or " " not in variable.value.strip() else " "
            ctx.report(variable.span, f"TORCH_CUDA_ARCH_LIST has no entry that runs on {self.target.name} "
                                      f"({self.target.capability_text}): extensions built with it fail with `no "
                                      f"kernel image is available`",
                       [Edit(variable.span.end, variable.span.end, f"{sep}{self.target.capability_text}")],
                       # Below 7.5 the entry compiles only under CUDA 12 or older: unknown here without a base image.
                       FixSafety.SAFE if cuda or cc >= floor else FixSafety.UNSAFE, f"add {self.target.capability_text}")

    @staticmethod
    def _without(variable, drop) -> Edit | None:
        words = re.split(r"([;\s]+)", variable.value)
        kept = [w for w in words[::2] if not any(e[0] in [c for c, _ in entries(w)] for e in drop) and w]
        if not kept:
            return None
        sep = next((s for s in words[1::2]), ";")
        return Edit(variable.span.start, variable.span.end, sep.join(kept))

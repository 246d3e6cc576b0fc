from __future__ import annotations

from rlcompat.analysis import declared_install
from rlcompat.knowledge import torch_wheels, versions
from rlcompat.knowledge.environment import torch_in_image
from rlcompat.rules.declared_environment.helpers import (caps_torch, chosen_torch, held_releases, minor_line_meets,
                                                         pins_torch_exactly, release_pinning, torch_cap_of_others,
                                                         torch_required_by)
from rlcompat.contract import Bad, DeclaredRule, Edit, FixSafety, Good, Span

CU = "https://download.pytorch.org/whl/"
UV_ROUTED = ('[project]\nname = "x"\ndependencies = ["torch==2.7.1"]\n\n[tool.uv.sources]\ntorch = {{ index = "torch-gpu" }}\n\n'
             '[[tool.uv.index]]\nname = "torch-gpu"\nurl = "' + CU + '{tag}"\nexplicit = true\n')
UV_EXTRA = ('[project]\nname = "x"\n\n[project.optional-dependencies]\nsglang = ["torch==2.7.1"]\n\n[tool.uv.sources]\n'
            'torch = {{ index = "torch-gpu" }}\n\n[[tool.uv.index]]\nname = "torch-gpu"\nurl = "' + CU + '{tag}"\nexplicit = true\n')


class DeclaredTorchWheelLacksArch(DeclaredRule):
    code = "RLC601"
    name = "declared-torch-wheel-lacks-arch"
    title = "A declared torch pin or wheel index installs a torch build without kernels for the target GPU"
    what = (
        "Reads `torch` requirements and PyTorch wheel indexes (`--index-url`/`--extra-index-url`/`-f "
        "https://download.pytorch.org/whl/cuXXX`, `+cuXXX` versions, uv indexes, `PIP_INDEX_URL`, conda "
        "`pytorch-cuda=X.Y`) in requirement files, pyproject.toml, conda environment files, Dockerfiles and `pip "
        "install` commands of scripts (a `-r FILE` of the scanned tree counts as FILE's requirements, at FILE). The "
        "release pip installs is the newest one the specifier allows; the variant is "
        "the index's (or the version's `+cuXXX`) tag, else what PyPI ships for that release. Reports it when the "
        "variant's architecture list (rlcompat/knowledge/data/torch_wheels.toml, the table `rlcompat doctor` reads) has no code for "
        "the target. A requirement whose release pins torch exactly (`vllm==0.11.0`: torch 2.8.0, rlcompat/knowledge/data/torch_wheels.toml "
        "`[[requires_torch]]`) installs that torch (not where the Dockerfile stage's base image holds that release "
        "already, environment.toml `[[docker.torch_tag]]`: pip keeps it, and RLC602 judges the image's); so does one without an upper bound whose newest release asks for a "
        "newer torch (`torchvision`: 0.29.2 asks for torch>=2.14.0), unless the same install caps torch (for a setup.py, "
        "the requirements file its `install_requires` reads is the same install) or pins a package that holds torch at "
        "one release (`vllm==0.8.3`, a release the table lacks, of a package every known release of which pins torch "
        "exactly: pip backtracks the other, where some torch the install allows runs on the card). Beside an exact torch "
        "pin, such a package installs a release that pins that torch (`vllm>0.8.5.post1` with `torch==2.9`: vllm "
        "0.13.0, torch 2.9.0), where the table knows one. A lower-bound-only torch beside a requirement whose release "
        "asks for a capped torch range (`colossalai>=0.4.7`: `torch>=2.2.0,<=2.5.1`) resolves under that cap. In "
        "pyproject.toml each line that brings "
        "a torch (the core's, each extra's: an extra is its own install) is judged as pip installs it (from PyPI: pip "
        "reads no `[tool.uv]` table) and as `uv sync [--extra X]` does: uv takes every torch the project declares, and the "
        "torch an engine pin of the same install asks for, from the explicit index `[tool.uv.sources]` sends torch to "
        "(its Linux row, or the row of that extra), else from the first uv index it looks in before PyPI (a "
        "non-explicit `[[tool.uv.index]]`, `[tool.uv] extra-index-url`/`index-url`); such a line is reported where it applies, and the route once, where "
        "the fix repoints it (an explicit index nothing sends torch to is not torch's)."
    )
    why = (
        "torch wheels hold cubins for a fixed list of architectures [S29][S30]: cu128/cu129 dropped sm_50-sm_61 from "
        "torch 2.8 (and sm_70 in 2.7 and 2.11) [S31], cu130 and cu132 start at sm_75 [S29][S30], and PyPI's "
        "default variant is cu128 from 2.8 and cu130 from 2.11 [S32]. Installing one of them for a P40 or V100 "
        "succeeds; the first CUDA kernel then fails with `no kernel image is available for execution on the "
        "device` [S34]."
    )
    fix_safety = (
        "Where the declaration names the PyTorch index, the fix swaps its tag (and a `+cuXXX` pin's) for the "
        "lowest-CUDA variant of the same torch release that runs on the target (cu126 for Pascal and Volta; for a "
        "uv route, the lowest of the same CUDA major release that ships every torch the file pins, so packages built "
        "for CUDA 12 beside torch keep their runtime): the torch version stays, so the fix is safe. A torch taken from PyPI's default variant gets an "
        "`--extra-index-url` line for that variant (unsafe: pip then prefers the `+cuXXX` build of the same "
        "release, which depends on resolution order), and a torch range gets an upper bound at the variant's last "
        "release (`torch>=2.6` -> `torch>=2.6,<2.15`): pip takes the newest release PyPI or the index has, and past "
        "the variant's releases that is PyPI's default build again. The fix keeps the environment installable [S100]: "
        "`+cuXXX` pins of torch, torchvision and torchaudio move with the index (the index publishes them per "
        "variant [S102]), every index of the install on the old variant moves (each `[[tool.uv.index]]` group torch "
        "is sent to, per extra or platform marker; `[tool.uv] extra-index-url`), and each exact torch pin must have "
        "a build in the new variant. Where a file the fix cannot edit keeps the old variant (a `-r`/`-c` file the "
        "requirement file names, `[tool.uv] constraint-dependencies`, a `uv.lock` that pins the old build: "
        "`uv sync --locked` refuses a stale lock and `--frozen` installs it [S101]; or wheel hashes the file pins), "
        "the fix is withheld and the finding names that file and what to change. A wheel's own URL under "
        "download.pytorch.org/whl/cuXXX/ is never rewritten. Files of another backend (an Ascend NPU, ROCm, Intel "
        "XPU, TPU or CPU-only install: `torch-npu`, a `rocm`/`xpu`/`cpu` index or build, a CANN or ROCm base image, a "
        "file named `requirements-npu.txt` or `Dockerfile.rocm`; in pyproject.toml an extra named `cpu`, `npu`, "
        "`rocm`, ...) are not NVIDIA installs: not reported, never edited."
    )
    names = ("torch", "pytorch", "vllm", "sglang", "torchaudio", "torchvision", "colossalai")  # packages rlcompat/knowledge/data/torch_wheels.toml [[requires_torch]] knows to pin one
    sources = ("S29", "S30", "S31", "S32", "S34", "S100", "S101", "S102", "S161")
    prevents = ("E1", "E2")

    bad = (
        Bad(f"--index-url {CU}cu130\ntorch==2.9.1\ntransformers\n", path="requirements.txt",
            fixed=f"--index-url {CU}cu126\ntorch==2.9.1\ntransformers\n"),
        Bad(f"--extra-index-url {CU}cu128\ntorch==2.8.0+cu128\n", path="requirements.txt",
            fixed=f"--extra-index-url {CU}cu126\ntorch==2.8.0+cu126\n"),
        Bad(f"pip install torch==2.9.0 torchvision --index-url {CU}cu130\n", path="setup.sh", target="sm70",
            fixed=f"pip install torch==2.9.0 torchvision --index-url {CU}cu126\n"),
        Bad("torch>=2.6\naccelerate\n", path="requirements.txt", unsafe=True,
            fixed=f"--extra-index-url {CU}cu126\ntorch>=2.6,<2.15\naccelerate\n"),
        Bad('[project]\nname = "x"\ndependencies = ["torch==2.8.0", "numpy"]\n', path="pyproject.toml"),
        Bad(f"FROM python:3.11\nRUN pip install --no-cache-dir torch==2.8.0 --index-url {CU}cu128\n",
            path="Dockerfile", fixed=f"FROM python:3.11\nRUN pip install --no-cache-dir torch==2.8.0 --index-url {CU}cu126\n"),
        Bad("name: rl\nchannels:\n  - pytorch\n  - nvidia\ndependencies:\n  - pip:\n    - torch==2.9.0\n",
            path="environment.yml"),
        # uv takes torch from the explicit index [tool.uv.sources] sends it to (reported there, the URL retagged);
        # pip reads no [tool.uv] table, and PyPI's 2.7.1 is the cu126 build, which runs
        Bad(UV_ROUTED.format(tag="cu128"), path="pyproject.toml", fixed=UV_ROUTED.format(tag="cu126")),
        # `uv sync --extra sglang` takes the extra's torch 2.7.1 from the routed cu128 index (reported at the pin, where
        # it applies, and at the route, which the fix repoints), though pip's PyPI build of 2.7.1 would run
        Bad(UV_EXTRA.format(tag="cu128"), path="pyproject.toml", fixed=UV_EXTRA.format(tag="cu126")),
        # `[tool.uv] extra-index-url`: uv looks there before PyPI, so `uv sync` takes the cu128 build of 2.7.1
        Bad('[project]\nname = "x"\ndependencies = ["torch==2.7.1"]\n\n[tool.uv]\nextra-index-url = ["' + CU + 'cu128"]\n',
            path="pyproject.toml",
            fixed='[project]\nname = "x"\ndependencies = ["torch==2.7.1"]\n\n[tool.uv]\nextra-index-url = ["' + CU + 'cu126"]\n'),
        # pip: PyPI's 2.8.0 is the cu128 build (reported at the pin; no fix in a pyproject)
        Bad('[project]\nname = "x"\n\n[project.optional-dependencies]\ngpu = ["torch==2.8.0"]\n', path="pyproject.toml"),
        # an optional extra is its own install; vllm 0.11.0 pins torch 2.8.0 (rlcompat/knowledge/data/torch_wheels.toml [[requires_torch]])
        Bad('[project]\nname = "x"\n\n[project.optional-dependencies]\nvllm = ["vllm==0.11.0"]\n', path="pyproject.toml"),
        # `>=A,<=B`: pip installs B, and vllm 0.31.0 pins torch 2.13.0, PyPI's cu130 build (TRL 1.16.0's vllm extra)
        Bad('[project]\nname = "x"\n\n[project.optional-dependencies]\nvllm = ["vllm>=0.22.0,<=0.31.0"]\n',
            path="pyproject.toml", target="sm70"),
        # no upper bound: pip takes torchvision's newest release, which asks for the newest torch (a cu130 build)
        Bad("torchvision\ntransformers\n", path="requirements.txt"),
        # beside an exact torch pin pip takes a vLLM release that pins that torch (vllm 0.13.0: torch 2.9.0, PyPI's
        # cu128 build; MARTI 7f7fe49 requirements.txt:22, :28)
        Bad("torch==2.9\nvllm>0.8.5.post1\n", path="requirements.txt", unsafe=True,
            fixed=f"--extra-index-url {CU}cu126\ntorch==2.9\nvllm>0.8.5.post1\n"),
        # without the pin that holds it back, vLLM's newest release and its torch (a cu130 build)
        Bad('[project]\nname = "x"\ndependencies = ["torch>=2.5.1", "unsloth==2025.10.1", "vllm>=0.8.5"]\n',
            path="pyproject.toml"),
        # torchaudio 2.8.0 pins torch 2.8.0 (PyPI's cu128 build), and pip backtracks sglang to a release that pins the
        # same (0.5.3): both lines bring it (xtuner v1.0.0rc0 requirements/sglang.txt:1, :15 [S441])
        Bad("sglang>=0.5.3\ntorchaudio==2.8.0\n", path="requirements.txt"),
    )
    good = (
        # vllm==0.8.3, a release the wheel table has no row of, pins torch exactly as every vLLM release does: pip
        # holds torch there and backtracks torchvision (and a bare torch) rather than taking their newest
        Good("vllm==0.8.3\ntorch\ntorchvision\n", path="requirements.txt"),
        # an exact pin the base image's torch meets (verl v0.7.0 docker/verl0.6-cu128-torch2.8.0-fa2.7.4/
        # Dockerfile.app.sglang:1-3: sglang 0.5.2 asks for torch 2.8.0, the image holds 2.8.0+cu128): pip keeps it,
        # and RLC602 judges the image's torch at the FROM line
        Good('FROM verlai/verl:base-verl0.6-cu128-cudnn9.8-torch2.8.0-fa2.7.4\nRUN pip install "sglang[all]==0.5.2"\n',
             path="Dockerfile"),
        Good(f"--index-url {CU}cu126\ntorch==2.9.1\n", path="requirements.txt"),
        Good(f"--index-url {CU}cu130\ntorch==2.9.1\n", path="requirements.txt", target="sm75"),
        Good(f"--extra-index-url {CU}cu128\ntorch==2.9.0\n", path="requirements.txt", target="sm70"),
        Good("torch==2.7.1\n", path="requirements.txt"),
        # colossalai's newest release asks for torch>=2.2.0,<=2.5.1: torch 2.5.1, whose PyPI build (cu124) has sm_60
        Good("torch>=2.1.0\ncolossalai>=0.4.7\n", path="requirements.txt", target="sm61"),
        Good("torch>=2.6\n", path="requirements.txt", target="sm80"),
        Good("pip install -r requirements.txt\n", path="setup.sh"),
        Good("name: rl\ndependencies:\n  - pytorch=2.1\n  - pytorch-cuda=12.1\n", path="environment.yml"),
        # PyPI's torch 2.7.1 is the cu126 build (sm_60 code); an explicit index nothing sends torch to serves no torch
        Good('[project]\nname = "x"\n\n[project.optional-dependencies]\nsglang = ["torch==2.7.1"]\n\n'
             '[[tool.uv.index]]\nname = "cu128"\nurl = "https://download.pytorch.org/whl/cu128"\nexplicit = true\n',
             path="pyproject.toml"),
        Good(UV_ROUTED.format(tag="cu128"), path="pyproject.toml", target="sm75"),
        # a torch wheel from a local folder: which release and build it is, the text does not say
        Good("FROM python:3.12\nRUN pip install /tmp/wheels/torch-*.whl\n", path="Dockerfile"),
        # torch held at 2.7.1 (PyPI's cu126 build): pip picks an older torchvision that accepts it
        Good("torch==2.7.1\ntorchvision\n", path="requirements.txt"),
        # an extra installs with the core dependencies, whose cap holds its unbounded torch at 2.10 (PyPI cu128: sm_70;
        # AReaL 1.0.4's sglang/cuda extras)
        Good('[project]\nname = "x"\ndependencies = ["torch>=2.9.1,<2.11"]\n\n[project.optional-dependencies]\n'
             'cuda = ["torch"]\n', path="pyproject.toml", target="sm70"),
        # --no-deps: torchvision comes without the torch it asks for
        Good("pip install --no-deps torchvision vllm==0.11.0\n", path="setup.sh"),
        # vLLM 0.10.0 and 0.10.1.1 pin torch 2.7.1, whose PyPI build (cu126) runs on sm61
        Good("torch==2.7.1\nvllm>0.8.5.post1\n", path="requirements.txt"),
        # a lower-bound torch beside an exact vLLM pin installs vLLM's torch (2.6.0, PyPI's cu124 build)
        Good('[project]\nname = "x"\ndependencies = ["torch>=2.5.1", "vllm==0.8.5.post1"]\n', path="pyproject.toml"),
        # unsloth 2025.5.1 pins transformers 4.51.3, which holds vLLM at 0.9.2 (torch 2.7.0, PyPI's cu126 build)
        Good('[project]\nname = "x"\ndependencies = ["torch>=2.5.1", "unsloth==2025.5.1", "vllm>=0.8.5"]\n',
             path="pyproject.toml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not all(v.runs_on(target.capability) for v in torch_wheels.wheel_variants())

    def check_declared(self, group, ctx) -> None:
        if declared_install.other_backend(group, ctx.path, ctx.source_text) is not None:
            return  # an Ascend/ROCm/XPU/CPU install: not what runs on an NVIDIA card
        if group.kind == "pyproject":
            self._pyproject(group, ctx)
            return
        cc = self.target.capability
        torch = group.requirement("torch")
        pytorch_indexes = [i for i in group.indexes if i.pytorch_tag]
        index = next((i for i in pytorch_indexes if i.kind == "index"), None) or (
            pytorch_indexes[0] if pytorch_indexes else None)
        if not any("$" in i.url and i.kind == "index" for i in group.indexes):
            self._torch_brought_by_others(group, index, ctx)
        conda_cuda = group.conda_package("pytorch-cuda")
        if torch is None and conda_cuda is not None and group.conda_package("pytorch") is not None:
            self._conda(group, conda_cuda, ctx)
            return
        if torch is None:
            if index is not None and index.pytorch_tag.startswith("cu"):
                self._index_only(index, ctx)
            return
        if any("$" in i.url and i.kind == "index" for i in group.indexes):
            return  # the index comes from a variable the shell front end could not resolve: unknown, not PyPI
        if not torch.version_known:
            return  # a wheel file whose release and build the text does not say (`/tmp/wheels/torch-*.whl`): not PyPI's
        version = chosen_torch(torch.spec.split("+", 1)[0] if "+" in torch.spec else torch.spec)
        held = _held_torch(group) if _takes_held(torch.spec) else None
        # a `torch` (or `torch>=2.5`) beside `vllm==0.8.4` installs the torch vLLM pins
        version = held if held and minor_line_meets(held, torch.spec) else version
        capped = torch_cap_of_others(group.requirements) if held is None and _takes_held(torch.spec) else None
        under_cap = chosen_torch(f"{torch.spec},{capped[0]}".strip(",")) if capped else None
        if under_cap is not None:
            version = under_cap  # `torch>=2.1.0` beside `colossalai>=0.4.7` (torch<=2.5.1): pip stays under the cap
        if version is None:
            return
        local = versions.local_tag(torch.spec)
        tag = local or (index.pytorch_tag if index is not None else None)
        if (tag is None and held is None and _takes_held(torch.spec) and _unknown_torch_pin(group)
                and _some_release_runs((torch.spec,), self.target.capability)):
            return  # another pin holds torch at a release the table cannot name: not the newest
        variant = torch_wheels.variant(version, tag)
        if variant is None and (floor := torch_wheels.tag_lacks(tag, cc)) is not None:
            # `torch==2.9.1+cu129`: a release the table has no row of on that index, every row of which lacks the card
            ctx.report(torch.span if index is None or local else index.span,
                       f"torch {version}{torch.origin_note} from the {floor.tag} index: {self._lacks(floor, version)}"
                       + (f"; install from {torch_wheels.index_url(fit)}"
                          if (fit := torch_wheels.fitting_tag(version, cc)) else ""), [None])
            return
        if variant is None or variant.runs_on(cc):
            return
        fit = torch_wheels.fitting_tag(version, cc)
        where = f"the {variant.tag} index" if index is not None or local else f"PyPI (its {variant.tag} build)"
        pinned = torch.spec.startswith(("==", "===")) or (torch.conda and torch.spec.startswith("="))
        release = version if pinned else f"{version} (the newest release `torch{torch.spec}` allows, per rlcompat/knowledge/data/torch_wheels.toml)"
        if under_cap is not None:
            release = f"{version} (the newest release `torch{torch.spec}` and {capped[1]}'s `torch{capped[0]}` allow)"
        message = (f"torch {release}{torch.origin_note} from {where} has kernels for {', '.join(variant.arches)} only: none runs on "
                   f"{self.target.name} ({self.target.capability_text}), so the first CUDA call fails with `no "
                   f"kernel image is available`")
        edits: list[Edit | None] = []
        safety, description = FixSafety.SAFE, ""
        if fit is not None and index is not None and not index.editable:
            message += f"; set it to {torch_wheels.index_url(fit)} where the variable is defined"
        elif fit is not None and index is not None:
            edits.append(_retag(index.tag_span(), fit))
            old = {t for t in (index.pytorch_tag, local) if t}
            plan = declared_install.retag_plan(group, ctx.source_text, ctx.path, old, fit, (index.span,))
            if index.kind != "index":  # PyPI still serves torch beside this index
                plan.take(declared_install.range_bound(torch, ctx.source_text, fit, version, group.kind))
            edits += plan.edits
            ctx.record_reads(plan.reads)
            description = f"install the {fit} build of torch {version}"
            message += f"; use {torch_wheels.index_url(fit)}" + plan.withheld
            edits = [None] if plan.problems else edits
        elif fit is not None and not local:
            description = f"add the {fit} index, whose build of torch {version} runs on {self.target.name}"
            message += f"; install from {torch_wheels.index_url(fit)}"
            plan = declared_install.added_index_plan(group, ctx.source_text, ctx.path, fit, torch, version)
            edits.append(_extra_index_line(group, torch, fit, ctx.source_text))
            edits += plan.edits
            ctx.record_reads(plan.reads)
            message += plan.withheld
            edits = [None] if plan.problems else edits
            safety = FixSafety.UNSAFE
        elif fit is None:
            message += "; no official wheel of this release runs on it: pin an older torch"
        ctx.report(torch.span if index is None or local else index.span, message,
                   edits if edits else [None], safety, description)

    def _pyproject(self, group, ctx) -> None:
        """pyproject.toml is installed two ways: pip reads no `[tool.uv]` table, so each torch requirement (the core
        one, and each extra's own pin: an extra is its own install) comes from PyPI; uv takes every torch the project
        declares from the index `[tool.uv.sources]` sends torch to (or a non-explicit uv index) [S180]. Each line
        that brings a torch is judged by the wheel each installer takes for it, and the uv route once, where the fix
        repoints it."""
        cc = self.target.capability
        torches = [r for r in group.requirements if r.name == "torch" and not r.conda
                   and not declared_install.backend_extra(r.extra)]  # the `cpu`/`npu` extra is no NVIDIA install
        core_caps = any(caps_torch(t.spec) for t in torches if not t.extra)
        reported: set[tuple[int, int]] = set()
        for torch in torches:
            if torch.uv_only or torch.extra and core_caps and not caps_torch(torch.spec):
                # uv's alone (pip reads no [tool.uv] table: judged below); or an extra installs with the core
                # dependencies, whose cap holds its unbounded torch (judged there)
                continue
            version = chosen_torch(torch.spec.split("+", 1)[0] if "+" in torch.spec else torch.spec)
            held = _held_torch(group, torch.extra) if _takes_held(torch.spec) else None
            if (held is None and _takes_held(torch.spec) and not versions.local_tag(torch.spec)
                    and _unknown_torch_pin(group, torch.extra) and _some_release_runs((torch.spec,), cc)):
                continue  # another pin holds torch at a release the table cannot name: not the newest
            version = held if held and minor_line_meets(held, torch.spec) else version  # (as below, for pip's other files)
            variant = torch_wheels.variant(version, versions.local_tag(torch.spec)) if version else None
            if variant is None or variant.runs_on(cc):
                continue
            fit = torch_wheels.fitting_tag(version, cc)
            extra = f" (the `{torch.extra}` extra)" if torch.extra else ""
            where = f"the {variant.tag} index" if versions.local_tag(torch.spec) else f"PyPI (its {variant.tag} build)"
            ctx.report(torch.span, f"pip installs torch {self._release(torch.spec, version)}{extra} from {where}: "
                                   f"{self._lacks(variant)}" + (f"; install from {torch_wheels.index_url(fit)}" if fit else
                                                                "; no official wheel of this release runs on it"),
                       [None])
            reported.add((torch.span.start, torch.span.end))
        uv_indexes = [i for i in group.indexes if i.uv_only and (i.pytorch_tag or "").startswith("cu")]
        uv_torches = self._uv_torches(group, torches, core_caps, uv_indexes)
        if uv_indexes and not torches:
            self._index_only(uv_indexes[0], ctx)
        elif uv_indexes:
            self._uv_indexes(group, uv_indexes, uv_torches, ctx)
        reported |= self._torch_brought_by_others(group, None, ctx)
        self._uv_installs(uv_indexes, uv_torches, ctx, reported)

    def _uv_torches(self, group, torches, core_caps: bool, indexes=()) -> list[tuple[object, str, str]]:
        """(requirement, torch release, what brings it) for each line of a uv install that brings a torch: a torch
        requirement (a range resolved on the index torch is routed to: `torch>=2.9.0` sent to cu128 is 2.11, that
        index's last release), and an engine pin whose release pins torch exactly (`vllm==0.10.1.1`: 2.7.1) where
        the same install declares torch itself, so uv's index pin for torch covers it (a package the project never
        declares is not routed [S180])."""
        out = []
        capping = next((t.spec for t in torches if not t.extra and caps_torch(t.spec)), "")
        routed = [i for i in indexes if i.routed_at is not None]
        for torch in torches:
            spec = torch.spec
            if torch.extra and core_caps and not caps_torch(torch.spec):
                spec = capping  # uv resolves one torch for the install: the core dependencies' cap holds the extra's
            index = next((i for i in routed if i.routed_extras is None or (torch.extra and torch.extra in i.routed_extras)),
                         None)
            # the newest release the routed index builds; where the wheel table knows none of that index's releases
            # the spec allows, the release itself (judged by the index's floor: `tag_lacks`)
            version = (chosen_torch(spec.split("+", 1)[0], index.pytorch_tag if index is not None else None)
                       or chosen_torch(spec.split("+", 1)[0]))
            if version is not None:
                out.append((torch, version, f"torch{torch.spec}{torch.origin_note}"))
        # the release wheels `[tool.uv.sources]` sends a declared package to (`vllm = { url = ".../vllm-0.26.0+cu129-
        # ...whl" }`): uv installs that file's release for the package's ranges too, not the newest release [S236]
        wheels = {(r.name, r.extra): r.spec for r in group.requirements
                  if not r.editable and not r.uv_only and r.spec.startswith("==")}
        for req in group.requirements:
            sent = wheels.get((req.name, req.extra)) or wheels.get((req.name, "")) if req.editable else None
            spec = sent or req.spec
            pin = torch_required_by(req.name, spec, req.extras) if req.name != "torch" and req.version_known else None
            if pin is None or not pin.torch or pin.torch_is_bound:
                continue
            own = [t for t in torches if t.extra in ("", req.extra)]
            if not own or any(t.spec.startswith("==") and t.spec[2:].split("+", 1)[0] != pin.torch for t in own):
                continue  # torch not declared by this install (not routed), or pinned to another release (refused)
            via = f", sent to {req.name}{sent} by [tool.uv.sources]" if sent else ""
            out.append((req, pin.torch, f"{req.name}{req.spec}{via} (which asks for torch=={pin.torch}: {pin.proof})"))
        return out

    def _uv_installs(self, indexes, uv_torches, ctx, reported: set[tuple[int, int]]) -> None:
        """Each line of a `uv sync [--extra X]` that brings a torch the routed index builds without the card's
        kernels, where pip's reading of that line found nothing (PyPI's build of the release runs): the line where
        the hazard applies; the fix is the route's (reported there)."""
        routed = [i for i in indexes if i.routed_at is not None]
        cc = self.target.capability
        for req, version, written in uv_torches:
            index = next((i for i in routed if i.routed_extras is None or (req.extra and req.extra in i.routed_extras)),
                         None if routed else next(iter(indexes), None))  # no route: the first index uv looks in
            if index is None and req.uv_only:
                self._uv_only_from_pypi(req, version, ctx, reported)
                continue
            variant = torch_wheels.variant(version, index.pytorch_tag) if index is not None else None
            floor = torch_wheels.tag_lacks(index.pytorch_tag, cc) if index is not None and variant is None else None
            variant = variant or floor
            if variant is None or variant.runs_on(cc) or (req.span.start, req.span.end) in reported:
                continue
            reported.add((req.span.start, req.span.end))  # one line, one finding (an override serves every extra)
            line = ctx.source_text.count("\n", 0, (index.routed_at or index.span).start) + 1
            install = f"uv sync --extra {req.extra}" if req.extra else "uv sync"
            fit = _common_fit(sorted({v for _, v, _ in uv_torches}, key=versions.release), cc, variant.cuda)
            how = "[tool.uv.sources] sends torch there" if index.routed_at is not None else "a uv index, looked up before PyPI"
            ctx.report(req.span, f"`{install}` installs torch {version} for {written} from the {variant.tag} index "
                                 f"({how}, line {line}; pip reads no [tool.uv] table): "
                                 f"{self._lacks(variant, version if floor else '')}; the fix is at line {line}"
                                 + (f" ({torch_wheels.index_url(fit)})" if fit else ""), [None])

    def _uv_only_from_pypi(self, req, version: str, ctx, reported: set[tuple[int, int]]) -> None:
        """A torch only uv installs (an override row) in a project that routes torch to no index: PyPI's build."""
        variant = torch_wheels.variant(version)
        if variant is None or variant.runs_on(self.target.capability) or (req.span.start, req.span.end) in reported:
            return
        reported.add((req.span.start, req.span.end))
        fit = torch_wheels.fitting_tag(version, self.target.capability)
        ctx.report(req.span, f"uv installs torch {version} for every torch requirement ({req.origin}; pip reads no "
                             f"[tool.uv] table) from PyPI (its {variant.tag} build): {self._lacks(variant)}"
                             + (f"; install from {torch_wheels.index_url(fit)}" if fit else
                                "; no official wheel of this release runs on it"), [None])

    def _uv_indexes(self, group, indexes, uv_torches, ctx) -> None:
        """Every uv index torch is sent to (one per extra or platform marker, or the default one) whose variant lacks
        the card's kernels for a torch the project installs through it is reported once, at its route, and
        repointed together, with the rest of the project's install."""
        cc = self.target.capability
        lacking = []
        for index in indexes:
            through = {v for req, v, _ in uv_torches
                       if index.routed_extras is None or (req.extra and req.extra in index.routed_extras)}
            for v in sorted(through, key=versions.release):
                found = torch_wheels.variant(v, index.pytorch_tag) or torch_wheels.tag_lacks(index.pytorch_tag, cc)
                if found is not None and not found.runs_on(cc):
                    lacking.append((index, v, found))
        if not lacking:
            return
        releases = sorted({v for _, v, _ in uv_torches}, key=versions.release)
        index, first, variant = lacking[0]
        bad = [i for i in indexes if any(i is j for j, _, _ in lacking)]
        fit = _common_fit(releases, cc, variant.cuda)  # every release the project pins comes from the repointed index
        how = "[tool.uv.sources] sends torch to it" if index.routed_at is not None else "a uv index"
        others = f" (and {len(bad) - 1} more uv index of that kind)" if len(bad) > 1 else ""
        message = (f"uv installs torch {', '.join(dict.fromkeys(v for _, v, _ in lacking))} from the "
                   f"{index.pytorch_tag} index ({how}){others}; torch {first} there: "
                   f"{self._lacks(variant, '' if variant.ships(first) else first)}")
        edits: list[Edit | None] = [None]
        if fit is not None:
            message += f"; use {torch_wheels.index_url(fit)}"
            edits = [_retag(i.tag_span(), fit) for i in bad]
            plan = declared_install.uv_plan(group, ctx.source_text, ctx.path, {i.pytorch_tag for i in bad}, fit,
                                            tuple(i.span for i in bad))
            edits += plan.edits
            ctx.record_reads(plan.reads)
            message += plan.withheld
            edits = [None] if plan.problems else edits
        if None not in edits:  # one index routed by several rows is one URL to retag
            edits = list(dict.fromkeys(edits))
        ctx.report(index.routed_at or index.span, message, edits, FixSafety.SAFE,
                   f"install torch from the {fit} index" if fit else "")
        line = ctx.source_text.count("\n", 0, (index.routed_at or index.span).start) + 1
        for other in dict.fromkeys(i.routed_at for i in bad if i.routed_at is not None and i.routed_at != index.routed_at):
            # another row of [tool.uv.sources] that sends torch to such an index (`extra = "cuda"` beside
            # `extra = "sglang"`): where that install is fixed; the edit is the one reported at `line`
            ctx.report(other, message + f" (this row routes torch there too; the fix is reported at line {line})", [None])

    def _torch_brought_by_others(self, group, index, ctx) -> set[tuple[int, int]]:
        """A requirement whose release pins torch exactly (rlcompat/knowledge/data/torch_wheels.toml `[[requires_torch]]`: vllm==0.11.0
        installs torch 2.8.0) replaces the machine's torch, from the group's pip index if it names one, else PyPI.
        Left alone where the same install pins another torch (pip refuses the pair), a torch pin of a file a setup.py's
        `install_requires` reads included (it installs with every extra)."""
        cc = self.target.capability
        reported: set[tuple[int, int]] = set()
        if group.deps_held:
            return reported  # `--no-deps`, or a constraints file: what the requirements ask for is not what pip installs
        if _foreign_index(group):
            # `--index-url` replaces PyPI [S401]: the release that index serves (torchforge's vLLM, built without its
            # torch pin [S400]) is not the one PyPI's Requires-Dist describes
            return reported
        core, reads = declared_install.core_requirements(group, ctx.path)
        ctx.record_reads(reads)
        core_torches = [t for t in core if t.name == "torch" and not t.conda]
        core_specs = {(c.name, c.spec.replace(" ", "")) for c in core}
        for req in group.requirements:
            if req.extra and (req.name, req.spec.replace(" ", "")) in core_specs:
                continue  # an extra repeating a requirement of the core file every extra installs with: judged there
            held_back = held_releases(group.requirements, req.extra)
            pin = (torch_required_by(req.name, req.spec, req.extras, held_back)
                   if req.name != "torch" and req.version_known else None)
            if pin is None or not pin.torch:
                continue
            own = [t for t in group.requirements if t.name == "torch" and t.extra in ("", req.extra)] + core_torches
            # (not pyproject.toml's: its uv source rows, which pip never reads, are requirements of the group too)
            held = _held_torch(group, req.extra)
            backtracked = None
            if not req.spec.startswith("==") and held is not None and held != pin.torch:
                # another package of this install is pinned to a release that holds torch: pip backtracks this one to
                # a release that pins that torch, which it then installs too (`sglang>=0.5.3` beside
                # torchaudio==2.8.0: sglang 0.5.3, torch 2.8.0); where the table knows no such release, nothing is known
                backtracked = release_pinning(req.name, req.spec, held)
                if backtracked is None or any(r is not req and r.name == req.name for r in group.requirements):
                    continue  # (the package written twice, a uv source row sending it to a wheel: judged there)
            if (not req.spec.startswith("==") and held is None and index is None
                    and _unknown_torch_pin(group, req.extra, req.name)
                    and _some_release_runs(tuple(t.spec for t in own), cc)):
                continue  # the same, at a release of the pinned package the table lacks (its torch is not named)
            if "torch" in group.pinned_by_variable:
                continue  # `torch==${V}` in the same install: torch is held at one release (pip backtracks the other)
            if pin.torch_is_bound:
                # a lower bound: pip replaces an older torch with the newest, unless this install caps torch (then it
                # backtracks to an older release of the package, whose requirement the table does not know)
                if any(caps_torch(t.spec) for t in own):
                    continue
                torch = chosen_torch(pin.torch)
                written = (f"{req.name}{req.spec}{req.origin_note} (pip takes the newest release, {pin.release}, which "
                           f"asks for torch{pin.torch})")
            elif backtracked is not None:
                torch = backtracked.torch
                written = (f"{req.name}{req.spec}{req.origin_note} beside a pin that holds torch at {held} (pip takes "
                           f"a release that pins that torch, as {req.name} {backtracked.release} does)")
                pin = backtracked
            else:
                torch, written = pin.torch, f"{req.name}{req.spec}{req.origin_note}"
                if any(t.spec.startswith("==") and "+" in t.spec and t.spec[2:].split("+", 1)[0] == pin.torch
                       for t in own):
                    continue  # the install pins that torch's build itself (`torch==2.8.0+cu126`): judged at that pin
                other = [t for t in own if t.spec.startswith("==") and t.spec[2:].split("+", 1)[0] != pin.torch]
                if other:
                    # the same install pins torch: pip takes a release of this package that pins that torch, where
                    # one exists (`vllm>0.8.5.post1` beside `torch==2.9`: vllm 0.13.0, torch 2.9.0)
                    back = release_pinning(req.name, req.spec, other[0].spec[2:]) if len(other) == 1 else None
                    if back is None:
                        continue  # no release the table knows takes that torch: pip refuses the pair on every card
                    torch = back.torch
                    written = (f"{req.name}{req.spec}{req.origin_note} beside torch{other[0].spec} (pip takes a "
                               f"release that pins that torch, as {req.name} {back.release} does)")
                    pin = back
            if torch is None or _image_holds(group.stage_image, torch):
                continue  # the base image's torch already meets the pin: pip keeps it (RLC602 judges the image's)
            tag = index.pytorch_tag if index is not None and not index.uv_only else None
            variant = torch_wheels.variant(torch, tag)
            if variant is None or variant.runs_on(cc):
                continue
            fit = torch_wheels.fitting_tag(torch, cc)
            where = f"the {variant.tag} index" if tag else f"PyPI (its {variant.tag} build)"
            ctx.report(req.span, f"{written} installs torch {torch} with it ({pin.proof}), from {where}: "
                                 f"{self._lacks(variant)}"
                                 + (f"; install torch from {torch_wheels.index_url(fit)} first, or pin another release"
                                    if fit else ""), [None])
            reported.add((req.span.start, req.span.end))
        return reported

    def _release(self, spec: str, version: str) -> str:
        pinned = spec.startswith(("==", "==="))
        return version if pinned else f"{version} (the newest release `torch{spec}` allows, per rlcompat/knowledge/data/torch_wheels.toml)"

    def _lacks(self, variant, unlisted: str = "") -> str:
        """Why the variant fails; `unlisted`: the torch release it stands for, where the table has no row of that
        release on the index and every row it has of the index lacks the card (torch_wheels.tag_lacks)."""
        if unlisted:
            return (f"rlcompat's wheel table has no row of torch {unlisted} there, and no {variant.tag} build it has "
                    f"(up to torch {variant.torch_below}: {', '.join(variant.arches)}) carries a kernel that runs on "
                    f"{self.target.name} ({self.target.capability_text}): the first CUDA call fails with "
                    "`no kernel image is available`")
        return (f"it has kernels for {', '.join(variant.arches)} only: none runs on {self.target.name} "
                f"({self.target.capability_text}), so the first CUDA call fails with `no kernel image is available`")

    def _index_only(self, index, ctx) -> None:
        tagged = torch_wheels.variants_tagged(index.pytorch_tag)
        cc = self.target.capability
        if not tagged or any(v.runs_on(cc) for v in tagged):
            return
        newest = ".".join(map(str, torch_wheels.torch_releases()[-1]))
        found = torch_wheels.wheel_for_target(newest, cc)  # the variant doctor's RLC501 would recommend
        fit = found[1].tag if found else None
        ctx.report(index.routed_at or index.span, f"no torch build on the {index.pytorch_tag} index has kernels for "
                               f"{self.target.name} ({self.target.capability_text})"
                               + (f"; use {torch_wheels.index_url(fit)}" if fit else ""), [None])

    def _conda(self, group, conda_cuda, ctx) -> None:
        torch = group.conda_package("pytorch")
        tag = "cu" + conda_cuda.spec.lstrip("=<>!~ ").replace(".", "")[:3]
        version = chosen_torch(torch.spec)
        variant = torch_wheels.variant(version, tag) if version else None
        if variant is None or variant.runs_on(self.target.capability):
            return
        ctx.report(conda_cuda.span, f"pytorch {version} built for CUDA {conda_cuda.spec.lstrip('=')} has kernels for "
                                    f"{', '.join(variant.arches)} only: none runs on {self.target.name}", [None])


def _foreign_index(group) -> bool:
    """Whether a pip command's `--index-url` names an index that is neither PyPI (nor a mirror of it: a `pypi` path or
    host) nor one of PyTorch's wheel indexes: every requirement of the command is taken from it [S401]."""
    return any(i.kind == "index" and not i.uv_only and not i.backend and i.editable and i.pytorch_tag is None
               and "pypi" not in i.url.lower() for i in group.indexes)


def _image_holds(image: str, torch: str) -> bool:
    """Whether the base image `image:tag` an install runs in holds this torch release already
    (environment.toml `[[docker.torch_tag]]`): pip then keeps it for an exact pin of that release."""
    name, _, tag = image.rpartition(":")
    held = torch_in_image(name, tag) if name else None
    return held is not None and bool(held[0]) and versions.release(held[0]) == versions.release(torch)


def _held_torch(group, extra: str = "") -> str | None:
    """The torch release a package pinned to one release in the same install asks for exactly (`vllm==0.8.4`: torch
    2.6.0, rlcompat/knowledge/data/torch_wheels.toml `[[requires_torch]]`), or a package another exact pin holds back
    to such a release (`vllm>=0.8.5` beside unsloth==2025.5.1: vllm 0.9.2, torch 2.7.0; `[[holds_back]]`): pip
    installs that torch for every other requirement, so a torch it satisfies takes it and a package whose newest
    release pins another torch backtracks. A uv source row is no requirement pip reads."""
    held = held_releases(group.requirements, extra)
    for req in group.requirements:
        if req.name == "torch" or req.extra not in ("", extra) or req.uv_only or not req.version_known:
            continue
        if not req.spec.startswith("==") and req.name not in held:
            continue
        pin = torch_required_by(req.name, req.spec, req.extras, held)
        if pin is not None and pin.torch and not pin.torch_is_bound:
            return pin.torch
    return None


def _unknown_torch_pin(group, extra: str = "", other_than: str = "") -> str:
    """An exact pin of the install (`vllm==0.8.3`, core or the extra's) of a package whose every known release pins
    torch exactly, at a release the table lacks: pip holds torch at whatever release that one asks for, so a torch
    without an upper bound, or a package whose newest release asks for a newer torch (`torchvision`), does not get
    the newest; pip backtracks it instead. "" where there is none; else the pin, as written."""
    for req in group.requirements:
        if req.name in ("torch", other_than) or req.extra not in ("", extra) or req.uv_only:
            continue
        if not req.spec.startswith("==") or torch_required_by(req.name, req.spec, req.extras) is not None:
            continue  # a range, or a release the table knows (`_held_torch` reads it)
        if pins_torch_exactly(req.name):
            return f"{req.name}{req.spec}"
    return ""


def _some_release_runs(specs, cc: tuple[int, int]) -> bool:
    """Whether some torch release the wheel table knows, allowed by these torch requirements' lower bounds, has a
    PyPI build that runs on `cc`: the release an unknown pin holds might be that one. Where none is (`torch>=2.9`
    on a P40: every PyPI build from 2.8 lacks sm_61), whatever release is held fails, and the finding stands."""
    for line in torch_wheels.torch_releases():
        version = ".".join(map(str, line)) + ".0"
        if all(minor_line_meets(version, s) for s in specs if s.strip()):
            found = torch_wheels.variant(version)
            if found is not None and found.runs_on(cc):
                return True
    return False


def _common_fit(releases: list[str], cc: tuple[int, int], cuda: str | None = None) -> str | None:
    """The variant tag that ships every one of these torch releases with kernels for `cc` (one index for all of a
    file's pins), or None: the lowest CUDA of the major release `cuda` (the variant the file names: cu128 -> cu126,
    so the packages built for CUDA 12 beside torch keep their runtime), else the lowest CUDA."""
    major = versions.release(cuda)[:1] if cuda else ()
    tags = [v.tag for v in sorted(torch_wheels.wheel_variants(),
                                  key=lambda v: (versions.release(v.cuda)[:1] != major, versions.release(v.cuda)))]
    return next((t for t in dict.fromkeys(tags) if all((found := torch_wheels.variant(v, t)) is not None and found.runs_on(cc)
                                                        for v in releases)), None)


def _retag(span: Span | None, tag: str) -> Edit | None:
    return Edit(span.start, span.end, tag) if span is not None else None


def _extra_index_line(group, torch, tag: str, text: str) -> Edit | None:
    """`--extra-index-url URL` before the torch line of a requirement file, or after the torch word of a command."""
    url = torch_wheels.index_url(tag)
    if group.kind == "requirements":
        line_start = text.rfind("\n", 0, torch.span.start) + 1
        newline = "\r\n" if text[text.find("\n", line_start) - 1: text.find("\n", line_start)] == "\r" else "\n"
        return Edit(line_start, line_start, f"--extra-index-url {url}{newline}")
    if group.kind == "command" and torch.editable:
        end = torch.span.end
        if text[end:end + 1] in ("'", '"') and text[torch.span.start - 1:torch.span.start] == text[end:end + 1]:
            end += 1  # after the closing quote of a quoted requirement
        return Edit(end, end, f" --extra-index-url {url}")
    return None


def _takes_held(spec: str) -> bool:
    """A torch requirement with no bound but lower ones (none at all, `>=2.5.1`): pip may take the torch another
    pin of the install holds, where it satisfies them."""
    return not spec.strip() or all(c.strip().startswith((">=", ">", "!=")) for c in spec.split(",") if c.strip())


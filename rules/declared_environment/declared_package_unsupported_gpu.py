from __future__ import annotations

from rlcompat.knowledge.capabilities import last_release_that_runs, min_capability
from rlcompat.knowledge import versions
from rlcompat.knowledge.environment import environment_facts, error_text, shipped_by_image
from rlcompat.rules.declared_environment.helpers import allows_only_below, asks_any_torch, minimum_installed, torch_required_by
from rlcompat.contract import Bad, DeclaredRule, Good


def _minimums() -> dict[str, dict]:
    """Packages rlcompat/knowledge/data/environment.toml gives a hard minimum capability (the table doctor's RLC503-RLC507 read)."""
    return {name: p for name, p in environment_facts()["packages"].items() if "min_capability" in p}


class DeclaredPackageUnsupportedGpu(DeclaredRule):
    code = "RLC603"
    name = "declared-package-unsupported-gpu"
    title = "A requirement (flash-attn, vLLM, SGLang, ...) for a package that cannot run on the target GPU"
    what = (
        "Reports a declared requirement (pip or conda; requirement files, pyproject.toml, environment files, "
        "`pip install` in Dockerfiles and scripts, with the requirements of a `-r FILE` of the scanned tree, a Python "
        "script's inline metadata; a pyproject.toml `[tool.uv.sources]` row that sends a declared package to a wheel, "
        "a git commit or an index, which is uv's install of it; a source build in a fresh clone "
        "the knowledge knows, environment.toml `[[source_build]]`: `pip install .` or `python setup.py install` in "
        "flash-attention (FlashAttention-2) or its `hopper/` (FlashAttention-3)) for a package whose minimum compute capability in "
        "rlcompat/knowledge/data/environment.toml `[packages]` is above the target: flash-attn (8.0), flash-attn-3 and -4 (9.0), "
        "SGLang (7.5), and vLLM per release, judged for the release the specifier installs (pip's newest "
        f"allowed): {min_capability('vllm').by_release()}. A base image whose tag names a package it ships "
        "(rlcompat/knowledge/data/environment.toml `[[docker.ships]]`: `hiyouga/pytorch:...-flashattn2.7.4-...`) counts as that "
        "requirement. `rlcompat doctor` reads the same table for what is installed. A package a pyproject.toml "
        "optional extra lists, of a release whose torch requirement rlcompat/knowledge/data/torch_wheels.toml `[[requires_torch]]` "
        "knows (or of a package whose every known release asks for any torch, as flash-attn), is not reported: "
        "installing an extra selects nothing, and the torch it brings is RLC601's to judge; the same holds for an "
        "engine that runs only where a config selects it (vLLM, SGLang: `runs_when_selected`), in any requirement "
        "whose release's torch is known (`vllm<=0.6.3` installs 0.6.3, which pins torch 2.4.0). Where that is not "
        "known, the package's own minimum is reported. A flash-attn requirement that installs only a FlashAttention 1 "
        "release (below 2.0.0, `imported_only_below`) is not reported: nothing loads it by being installed."
    )
    why = (
        "FlashAttention 2 refuses GPUs below Ampere (`FlashAttention only supports Ampere GPUs or newer.`) and its "
        "wheels hold sm80+ code only [S10][S12]; a source build on an older card fails or takes an hour first. "
        "FlashAttention 3/4 need Hopper [S13][S14]; vLLM and SGLang refuse older cards [S7][S35]. Installed, "
        "flash-attn is picked up automatically by transformers and verl and the first attention call fails. A "
        "script's `# /// script` block is installed by `uv run` before the script starts [S235]."
    )
    fix_safety = (
        "No autofix: dropping a requirement is right only where the code falls back (SDPA for attention, "
        "transformers for generation); `rlcompat scan` reports the code that does not (RLC201-RLC204, RLC401)."
    )
    names = ("flash", "vllm", "sglang", "flash_attn", "flash-attn")
    sources = ("S7", "S10", "S11", "S12", "S13", "S14", "S35", "S235", "S300", "S430", "S431", "S540")
    prevents = ("E8", "E19")

    bad = (
        Bad("torch==2.6.0\nflash-attn==2.7.4.post1\n", path="requirements.txt"),
        Bad("pip install flash_attn --no-build-isolation\n", path="install.sh", target="sm75"),
        # a range that reaches FlashAttention 2
        Bad("flash-attn>=1.0.7\n", path="requirements.txt", target="sm75"),
        # a script's inline metadata: `uv run train.py` installs it first [S235]
        Bad('# /// script\n# dependencies = [\n#     "flash-attn",\n# ]\n# ///\nimport flash_attn\n', path="train.py"),
        # a range whose newest allowed release's torch is not known: the package's own minimum
        Bad('[project]\nname = "x"\ndependencies = ["vllm>=0.8,<0.30"]\n', path="pyproject.toml"),
        Bad('[project]\nname = "x"\ndependencies = ["vllm>=0.20,<0.30"]\n', path="pyproject.toml", target="sm70"),
        # a release range whose torch is not known (the newest sglang's torch is: RLC601 judges that install)
        Bad("FROM python:3.11\nRUN pip install 'sglang[all]<0.5'\n", path="Dockerfile", target="sm70"),
        Bad("name: rl\ndependencies:\n  - python=3.10\n  - pip:\n    - flash-attn==2.8.3\n", path="environment.yml"),
        # a wheel file installed by name (PEP 427: distribution-version-...whl), as LLaMA-Factory 0.9.5's
        # docker/docker-cuda/Dockerfile.base:46-47 does
        Bad("FROM pytorch/pytorch:2.6.0-cuda12.4-cudnn9-devel\nRUN pip install "
            "https://example.org/flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl\n",
            path="Dockerfile", target="sm75"),
        # a source build in a fresh clone (environment.toml [[source_build]]): flash-attention's hopper/ builds
        # FlashAttention-3 (slime v0.3.0 docker/Dockerfile:28-30), its root FlashAttention-2
        Bad("FROM python:3.11\nRUN git clone https://github.com/Dao-AILab/flash-attention.git && \\\n"
            "    cd flash-attention/ && git submodule update --init && cd hopper/ && \\\n"
            "    MAX_JOBS=96 python setup.py install\n", path="Dockerfile", target="sm80"),
        Bad("git clone https://github.com/Dao-AILab/flash-attention\ncd flash-attention\npip install . --no-build-isolation\n",
            path="install.sh", target="sm75"),
        # a direct reference to a wheel whose URL percent-encodes the local label's `+` (open-instruct's
        # dependency groups at e6c3044: flash_attn_3-3.0.0%2B20260318.cu128...whl)
        Bad('[project]\nname = "x"\ndependencies = [\n    "flash-attn-3 @ https://example.org/flash_attn_3-3.0.0%2B20260318'
            '.cu128torch2100-cp39-abi3-linux_x86_64.whl ; platform_system == \'Linux\'",\n]\n', path="pyproject.toml",
            target="sm75"),
        # a dependency group uv installs by default (`default-groups`) [S300]
        Bad('[project]\nname = "x"\n\n[dependency-groups]\ncuda12 = ["flash-attn>=2.8.3"]\n\n[tool.uv]\n'
            'default-groups = ["dev", "cuda12"]\n', path="pyproject.toml", target="sm75"),
        # an image that ships flash-attn, named by a build ARG (LLaMA-Factory 0.9.5 docker/docker-cuda/Dockerfile:2-3)
        Bad("ARG BASE_IMAGE=hiyouga/pytorch:th2.6.0-cu124-flashattn2.7.4-cxx11abi0-devel\nFROM ${BASE_IMAGE}\n",
            path="Dockerfile"),
        # a folder of prebuilt wheels: the glob names the distribution, its release unknown (miles v0.1.0's Dockerfile)
        Bad("FROM python:3.12\nRUN pip install /tmp/wheels/flash_attn-*.whl\n", path="Dockerfile", target="sm75"),
    )
    good = (
        Good("flash-attn==2.7.4.post1\n", path="requirements.txt", target="sm80"),
        # FlashAttention 1 (MOSS-RLHF 4865d82's requirements.txt:5): transformers loads flash-attn only from 2.3.3
        # [S540]; nothing runs it unless code imports it
        Good("transformers==4.30.2\nflash-attn==1.0.7\n", path="requirements.txt"),
        Good("flash-attn<2\n", path="requirements.txt", target="sm75"),
        Good("vllm>=0.8\n", path="requirements.txt", target="sm75"),
        # vLLM's newest release (0.33.0) pins torch 2.14.0: the engine is reported where a config selects it, the torch
        # by RLC601
        Good('[project]\nname = "x"\ndependencies = ["vllm>=0.8"]\n', path="pyproject.toml"),
        Good("vllm==0.10.2\nfastapi\n", path="requirements.txt", target="sm70"),
        Good("# flash-attn  (Ampere only)\ntransformers\n", path="requirements.txt"),
        Good("ARG BASE_IMAGE=hiyouga/pytorch:th2.6.0-cu124-flashattn2.7.4-cxx11abi0-devel\nFROM ${BASE_IMAGE}\n",
             path="Dockerfile", target="sm80"),
        Good("FROM hiyouga/pytorch:th2.6.0-cu124-cxx11abi0-devel\n", path="Dockerfile"),
        # an extra that keeps the machine's torch (flash-attn 2.8.3 asks for any torch: rlcompat/knowledge/data/torch_wheels.toml)
        Good('[project]\nname = "x"\n\n[project.optional-dependencies]\nfast = ["flash-attn==2.8.3"]\n', path="pyproject.toml"),
        # an extra of any flash-attn: every release rlcompat knows asks for any torch (installing selects nothing)
        Good('[project]\nname = "x"\n\n[project.optional-dependencies]\ngpu = ["liger-kernel", "flash-attn"]\n',
             path="pyproject.toml"),
        # vLLM 0.6.3 pins torch 2.4.0, whose PyPI build (cu121) has sm_60 kernels; vLLM runs only where a config
        # selects it (verl's rollout.name), reported there (rlcompat/knowledge/data/torch_wheels.toml [S130])
        Good("transformers\nvllm<=0.6.3\n", path="requirements.txt"),
        # a frozen environment (ToRL's requirements.txt): vLLM 0.8.1 pins the torch 2.6.0 the file pins too
        Good("torch==2.6.0\ntransformers==4.50.0\nvllm==0.8.1\n", path="requirements.txt"),
        # an optional extra of vLLM 0.9.2, which pins torch 2.7.0 (PyPI cu126: sm_60 kernels); the engine is
        # reported where a config selects it, the torch by RLC601 (skyrl-train 0.1.0 pyproject.toml:84)
        Good('[project]\nname = "x"\n\n[project.optional-dependencies]\nvllm = ["vllm==0.9.2", "torch==2.7.0"]\n',
             path="pyproject.toml"),
        # a verl fork's extras (TTRL's verl/setup.py:49-65): vLLM 0.8.2 pins torch 2.6.0 [S430], sglang[all]
        # 0.4.4.post4 torch 2.5.1 [S431], both PyPI cu124 builds with sm_60 kernels; the engines run where selected
        Good('from setuptools import setup\nVLLM_REQUIRES = ["tensordict<=0.6.2", "vllm<=0.8.2"]\n'
             'SGLANG_REQUIRES = ["sglang[all]==0.4.4.post4"]\n'
             'setup(name="x", extras_require={"vllm": VLLM_REQUIRES, "sglang": SGLANG_REQUIRES})\n', path="setup.py"),
        # each RUN starts a new shell in the WORKDIR: the `cd` of the first RUN no longer holds, so the second builds
        # the project copied there, not FlashAttention-3
        Good("FROM python:3.11\nRUN git clone https://github.com/Dao-AILab/flash-attention.git && cd flash-attention/hopper\n"
             "RUN python setup.py install\n", path="Dockerfile"),
        Good("FROM python:3.11\nRUN git clone https://github.com/Dao-AILab/flash-attention.git && cd flash-attention/hopper && \\\n"
             "    python setup.py install\n", path="Dockerfile", target="sm90"),
        # a dependency group installed only on request (`uv sync --group cuda13`): not uv's default groups [S300]
        Good('[project]\nname = "x"\n\n[dependency-groups]\ncuda13 = ["flash-attn>=2.8.3"]\n\n[tool.uv]\n'
             'default-groups = ["dev", "cuda12"]\n', path="pyproject.toml", target="sm75"),
        # ... flash-attn-3 too: every build of its hopper/setup.py asks for any torch (rlcompat/knowledge/data/torch_wheels.toml
        # [S361]; open-instruct e6c3044's opt-in cuda13 group)
        Good('[project]\nname = "x"\n\n[dependency-groups]\ncuda13 = ["flash-attn-3 @ https://example.org/flash_attn_3-3.0.0'
             '%2B20260318.cu130torch2100-cp39-abi3-linux_x86_64.whl"]\n\n[tool.uv]\ndefault-groups = ["dev", "cuda12"]\n',
             path="pyproject.toml", target="sm75"),
        # a branch the build's own ARG default skips (LLaMA-Factory 0.9.5 docker/docker-cuda/Dockerfile:7, :39-43)
        Good("FROM python:3.11\nARG INSTALL_FLASHATTN=false\nRUN if [ \"${INSTALL_FLASHATTN}\" == \"true\" ]; then \\\n"
             "        pip install flash-attn --no-build-isolation; \\\n    fi\n", path="Dockerfile"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return any(target.capability < versions.capability(p["min_capability"]) for p in _minimums().values())

    def check_declared(self, group, ctx) -> None:
        minimums = _minimums()
        for image in group.images:
            if image.unreached:
                continue  # a build stage the default build never builds: what its image ships reaches no run
            for package, release, proof in shipped_by_image(image.image, image.tag):
                p = minimums.get(package)
                if p is None:
                    continue
                needed = (minimum_installed(p["min_capability_of"], "==" + release).text if "min_capability_of" in p
                          else p["min_capability"])
                if self.target.capability >= versions.capability(needed):
                    continue
                ctx.report(image.tag_span, f"{image.image}:{image.tag} ships {package} {release} "
                                           f"({proof.split(' (')[0]}): it needs compute capability "
                                           f"{needed}+, {self.target.name} is {self.target.capability_text}: "
                                           f"{p['why']} (`{error_text(p['error'])}`)", [None])
        for req in group.requirements:
            name = "flash-attn" if req.name == "flash-attention" else req.name
            p = minimums.get(name)
            if p is None:
                continue
            # Installing selects nothing where nothing runs the package by being there: an optional extra, or an
            # engine only a config or code selects (vLLM, SGLang: RLC401/RLC404 report where it is selected). What
            # such an install does to torch, where known, is RLC601's to judge.
            # An extra the tree's own install step asks for (`uv sync --extra X` in its Dockerfile) is no option there.
            optional = bool(req.extra) and not req.installed_by
            if p.get("imported_only_below") and allows_only_below(req.spec, p["imported_only_below"]):
                continue  # FlashAttention 1 (flash-attn < 2.0.0): nothing loads it by being installed; its import is where it runs
            if req.uv_source and p.get("runs_when_selected"):
                continue  # where uv takes an engine from: the engine is reported where selected, its torch at the declaration
            if (optional or p.get("runs_when_selected")) and (
                    req.version_known and torch_required_by(req.name, req.spec, req.extras) is not None
                    or (optional and asks_any_torch(name))):
                continue
            # A minimum that changed between releases: the one of the release this specifier installs.
            row = minimum_installed(p["min_capability_of"], req.spec) if "min_capability_of" in p else None
            if row is not None and not req.version_known and row.earlier:
                # a release nobody can know here (a clone's extra): only what every release needs is certain
                row = min((min_capability(row.name, e.through) for e in row.earlier),
                          key=lambda r: versions.capability(r.text))
            needed = row.text if row is not None else p["min_capability"]
            if self.target.capability >= versions.capability(needed):
                continue
            current = min_capability(p["min_capability_of"]) if row is not None else None
            written, history = req.name, ""
            if current is not None and current.since:
                older = last_release_that_runs(current.name, self.target)
                written = f"{req.name}{req.spec.strip()}"
                history = f"; {current.by_release()}" + (f": pin {req.name}<={older}" if older else "")
            ctx.report(req.span, f"{written}{req.origin_note} needs compute capability {needed}+, {self.target.name} is "
                                 f"{self.target.capability_text}: {p['why']}{history} "
                                 f"(`{error_text(p['error'])}`)", [None])

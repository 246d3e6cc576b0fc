"""pyproject.toml installed by pip and by uv: optional extras are their own installs (pip reads no `[tool.uv]` table),
an explicit uv index serves torch only where `[tool.uv.sources]` sends torch to it (reported on that line), and a
requirement whose release pins torch exactly (rlcompat/knowledge/data/torch_wheels.toml `[[requires_torch]]`) installs that torch."""

from __future__ import annotations

from rlcompat.api import scan_source
from rlcompat.knowledge import torch_wheels
from rlcompat.rules.declared_environment.helpers import torch_required_by
from rlcompat.lang import pyproject_deps
from rlcompat.rules import file_rules
from rlcompat.knowledge.targets import resolve_target

INDEX = '[[tool.uv.index]]\nname = "{name}"\nurl = "https://download.pytorch.org/whl/cu128"\nexplicit = {explicit}\n'


def _found(text: str, target: str = "sm61", path: str = "pyproject.toml", language: str = "pyproject"):
    return [(f.code, f.location.line) for f in scan_source(text, resolve_target(target), path, language)
            if f.code in ("RLC601", "RLC603")]


def test_an_explicit_index_is_torch_s_only_where_the_sources_table_sends_torch_there():
    deps = '[project]\nname = "x"\ndependencies = ["torch==2.7.1"]\n\n'
    routed = deps + '[tool.uv.sources]\n"torch" = [{ index = "gpu", marker = "sys_platform == \'linux\'" }]\n\n'
    # the route (line 6, where the fix repoints it) and the torch `uv sync` installs through it (line 3)
    assert _found(routed + INDEX.format(name="gpu", explicit="true")) == [("RLC601", 3), ("RLC601", 6)]
    assert not _found(deps + INDEX.format(name="gpu", explicit="true"))  # nothing sent there
    assert not _found(routed + INDEX.format(name="other", explicit="true"))
    # a non-explicit uv index serves every package: reported at its URL, and the torch uv takes from it
    assert _found(deps + INDEX.format(name="gpu", explicit="false")) == [("RLC601", 3), ("RLC601", 7)]


def test_the_torch_source_line_is_found_in_its_own_table_only():
    text = ('[project]\nname = "x"\n[tool.other]\ntorch = 1\n[tool.uv.sources]  # where packages come from\n'
            'numpy = { index = "a" }\ntorch = { index = "gpu" }\n[tool.ruff]\ntorch = 2\n')
    [route] = pyproject_deps._torch_routes({"torch": {"index": "gpu"}, "numpy": {"index": "a"}}, text)
    assert (route.index, route.extras) == ("gpu", None) and text[route.span.start:route.span.end] == 'torch = { index = "gpu" }'
    crlf = text.replace("\n", "\r\n")
    [route] = pyproject_deps._torch_routes({"torch": {"index": "gpu"}}, crlf)
    assert crlf[route.span.start:route.span.end] == 'torch = { index = "gpu" }'


def test_a_list_of_torch_sources_is_read_row_by_row_for_linux_and_for_extras():
    # NeMo RL v0.4.0's form: the Linux row routes torch, the macOS row does not apply on the card's machine; uv's
    # "accelerators with optional dependencies" form: each row is limited to its extra [S180]
    text = ('[tool.uv.sources]\ntorch = [\n  { index = "cu", marker = "sys_platform != \'darwin\'" },\n'
            '  { index = "pypi", marker = "sys_platform == \'darwin\'" },\n]\nnumpy = { index = "a" }\n')
    sources = {"torch": [{"index": "cu", "marker": "sys_platform != 'darwin'"},
                         {"index": "pypi", "marker": "sys_platform == 'darwin'"}]}
    [route] = pyproject_deps._torch_routes(sources, text)
    assert route.index == "cu" and text[route.span.start:route.span.end].startswith('{ index = "cu"')
    rows = {"torch": [{"index": "cpu", "extra": "cpu"}, {"index": "gpu", "marker": "extra == 'gpu' and extra != 'cpu'"},
                      {"index": "win", "marker": "sys_platform == 'win32' or platform_system == 'Windows'"}]}
    assert [(r.index, r.extras) for r in pyproject_deps._torch_routes(rows, "")] == [("cpu", ("cpu",)), ("gpu", ("gpu",))]


UV_EXTRAS = ('[project]\nname = "x"\n\n[project.optional-dependencies]\n'
             'sglang = ["sglang[srt]==0.4.8.post1", "torch==2.7.1", "torchvision"]\n'
             'mcore = ["vllm==0.10.1.1", "torch==2.7.1"]\n'
             'engine = ["vllm==0.10.1.1"]\n'
             'vllm = ["vllm==0.11.0", "torch==2.8.0"]\n\n'
             '[tool.uv.sources]\ntorch = {{ index = "pytorch-cu128"{limit} }}\n\n'
             '[[tool.uv.index]]\nname = "pytorch-cu128"\nurl = "https://download.pytorch.org/whl/cu128"\nexplicit = true\n')


def test_uv_takes_each_extra_s_torch_from_the_index_the_sources_table_routes_torch_to():
    # skyrl-train's form: PyPI's 2.7.1 is the cu126 build (runs on sm61), cu128's has sm_75 and up only. Each line of a
    # `uv sync --extra X` that brings torch 2.7.1 is reported where it applies (the torch pin, and the engine whose
    # release pins it), the route once where the fix repoints it; pip's findings on the vllm extra stay as they were.
    text = UV_EXTRAS.format(limit="")
    # line 5: sglang[srt]==0.4.8.post1 and torch==2.7.1; 6: vllm==0.10.1.1 and torch==2.7.1; 8: pip's vllm 0.11.0 pair
    assert _found(text) == [("RLC601", 5), ("RLC601", 5), ("RLC601", 6), ("RLC601", 6), ("RLC601", 8), ("RLC601", 8),
                            ("RLC601", 11)]
    messages = {f.location.line: f.message for f in scan_source(text, resolve_target("sm61"), "pyproject.toml", "pyproject")
                if f.code == "RLC601"}
    assert "`uv sync --extra mcore` installs torch 2.7.1" in messages[6] and "line 11" in messages[6]
    # `engine` declares no torch of its own: uv does not route a package the install does not declare [S180], and
    # PyPI's 2.7.1 runs; the route's fix names an index with every release the file pins (cu126 has 2.7.1 and 2.8.0)
    assert 7 not in messages and "cu126" in messages[11]
    assert not [f for f in _found(text, "sm75")]  # cu128 builds carry sm_75


def test_a_route_limited_to_one_extra_routes_that_extra_s_torch_only():
    text = UV_EXTRAS.format(limit=', extra = "mcore"')
    # mcore's two lines and the route; the vllm extra's pip findings (8) stay; sglang's 2.7.1 comes from PyPI (cu126)
    assert _found(text) == [("RLC601", 6), ("RLC601", 6), ("RLC601", 8), ("RLC601", 8), ("RLC601", 11)]


def test_each_extra_is_judged_as_its_own_install_and_extras_select_no_package():
    text = ('[project]\nname = "x"\n\n[project.optional-dependencies]\nnew = ["torch==2.8.0", "flash-attn==2.8.3"]\n'
            'old = ["torch==2.7.1", "sglang[srt]==0.4.8.post1"]\n')
    assert _found(text) == [("RLC601", 5)]  # PyPI's 2.8.0 is cu128 (no sm_60); its 2.7.1 is cu126
    assert not _found(text, "sm75")
    requirements = pyproject_deps.parse(text).requirements
    assert [(r.name, r.extra, r.extras) for r in requirements] == [
        ("torch", "new", ()), ("flash-attn", "new", ()), ("torch", "old", ()), ("sglang", "old", ("srt",))]


def test_a_package_in_an_extra_whose_torch_requirement_is_not_known_keeps_its_own_minimum():
    # SGLang's newest release under `>=0.4,<0.5` is not known here, nor the torch it pins: its own minimum is reported
    text = '[project]\nname = "x"\n\n[project.optional-dependencies]\nserve = ["sglang>=0.4,<0.5"]\n'
    assert _found(text) == [("RLC603", 5)]
    # with no upper bound pip takes the newest release (0.5.23), whose torch pin (2.14.1, cu130) is known: RLC601's
    assert _found(text.replace(",<0.5", "")) == [("RLC601", 5)]
    # every flash-attn release rlcompat/knowledge/data/torch_wheels.toml knows asks for any torch: an extra of it
    # (2.7.4 too) keeps the machine's torch and selects nothing
    assert not _found('[project]\nname = "x"\n\n[project.optional-dependencies]\nfast = ["flash-attn==2.7.4"]\n')
    # the row for sglang 0.4.8.post1's torch pin holds for its srt extra only
    assert torch_required_by("sglang", "==0.4.8.post1", ("srt", "openai")).torch == "2.7.1"
    assert torch_required_by("sglang", "==0.4.8.post1") is None


def test_a_release_that_pins_torch_installs_it_unless_the_same_install_pins_another():
    assert torch_required_by("vllm", "==0.11.0").torch == "2.8.0"
    assert torch_required_by("vllm", ">=0.4.3,<=0.11.0").torch == "2.8.0"  # pip installs the inclusive cap
    assert torch_required_by("vllm", ">=0.4.3,<0.11.0") is None  # the newest release below a bound is not known here
    assert torch_required_by("vllm", ">=0.12,<=0.11.0") is None  # a cap the lower bound excludes
    extra = '[project]\nname = "x"\n\n[project.optional-dependencies]\nvllm = ["vllm==0.11.0"{more}]\n'
    assert _found(extra.format(more="")) == [("RLC601", 5)]
    assert not _found(extra.format(more=', "torch==2.6.0"'))  # pip refuses the pair: not this rule's to say
    # a requirement file: the torch it brings (RLC601); vLLM itself runs only where a config or code selects it
    # (RLC401/RLC404 there), so RLC603 leaves a release whose torch is known
    assert sorted(_found("vllm==0.11.0\n", path="requirements.txt", language="requirements")) == [("RLC601", 1)]
    assert torch_required_by("vllm", "<=0.6.3").torch == "2.4.0"  # pip installs the newest allowed: 0.6.3
    assert not _found("vllm<=0.6.3\n", path="requirements.txt", language="requirements")  # torch 2.4: cu121, sm_60
    # a pip index that ships that torch with the card's code: the torch it brings runs
    assert not [c for c in _found("--index-url https://download.pytorch.org/whl/cu126\nvllm==0.11.0\n",
                                  path="requirements.txt", language="requirements") if c[0] == "RLC601"]


def test_every_package_known_to_pin_torch_is_a_trigger_of_the_torch_wheel_rule():
    (rule,) = [r for r in file_rules() if r.code == "RLC601"]
    for row in torch_wheels.torch_requirements():
        assert row.proof and (not row.torch or row.package in rule.triggers), row


def test_an_engine_extra_whose_release_pins_a_torch_with_the_card_s_kernels_is_not_reported():
    # skyrl-train 0.3.0's mcore extra: vllm 0.10.1.1 pins torch==2.7.1 (its wheel's METADATA), PyPI's 2.7.1 is cu126
    # with sm_60; the engine fails only where a config selects it
    assert torch_required_by("vllm", "==0.10.1.1").torch == "2.7.1"
    text = '[project]\nname = "x"\n\n[project.optional-dependencies]\nmcore = ["vllm==0.10.1.1", "torch==2.7.1"]\n'
    assert not _found(text) and not _found(text, "sm75")
    # a torch that lacks sm_60 in the same release line still is
    assert _found(text.replace("0.10.1.1", "0.11.0").replace("2.7.1", "2.8.0")) == [("RLC601", 5), ("RLC601", 5)]


def test_an_engine_install_whose_release_s_torch_is_known_is_judged_by_that_torch_not_the_engine_s_minimum():
    # verl v0.5.0's scripts/install_vllm_sglang_mcore.sh: vllm 0.8.5.post1 and sglang[all] 0.4.6.post1 pin torch 2.6.0
    # (PyPI METADATA [S182]; `all` pulls `srt`), PyPI's cu124 build with sm_60: installing the engines fails on no card
    script = ('pip install "sglang[all]==0.4.6.post1" --no-cache-dir\n'
              'pip install --no-cache-dir "vllm==0.8.5.post1" "torch==2.6.0" torchdata\n')
    assert not _found(script, "sm61", "install.sh", "shell")
    assert torch_required_by("sglang", "==0.4.6.post1", ("all",)).torch == "2.6.0"
    assert torch_required_by("sglang", "==0.4.6.post1", ("openai",)) is None  # without srt no torch pin is known
    # a release nobody looked up keeps the engine's own minimum (vLLM 0.8.3: 7.0)
    assert torch_required_by("vllm", "==0.8.3") is None
    assert _found('pip install "vllm==0.8.3"\n', "sm61", "install.sh", "shell") == [("RLC603", 1)]
    # one looked up is judged by the torch it pins (vLLM 0.8.1: torch 2.6.0, PyPI's cu124 build, runs on sm61)
    assert _found('pip install "vllm==0.8.1"\n', "sm61", "install.sh", "shell") == []


def test_an_engine_in_the_core_dependencies_whose_release_pins_a_torch_with_the_card_s_kernels_is_not_reported():
    # sail-sg/oat's pyproject.toml: `vllm==0.8.4` beside flash-attn in the core dependencies; vllm 0.8.4 pins
    # torch==2.6.0 (its wheel's METADATA [S225]), PyPI's cu124 build with sm_60: the install fails on no card, the
    # engine fails where a run builds it
    assert torch_required_by("vllm", "==0.8.4").torch == "2.6.0"
    text = '[project]\nname = "x"\ndependencies = [\n  "deepspeed==0.16.8",\n  "vllm==0.8.4",\n]\n'
    assert not _found(text) and not _found(text, "sm75")
    assert not _found('pip install "vllm==0.8.4"\n', "sm61", "install.sh", "shell")


def test_the_older_uv_index_settings_serve_torch_before_pypi():
    # `[tool.uv] extra-index-url` (uv's settings reference: looked up before the default index [S180]); pip ignores it
    text = ('[project]\nname = "x"\ndependencies = ["torch==2.7.1", "numpy"]\n\n[tool.uv]\n'
            'extra-index-url = ["https://download.pytorch.org/whl/cu128"]\n')
    assert _found(text) == [("RLC601", 3), ("RLC601", 6)]
    assert not _found(text, "sm75")
    assert not _found(text.replace("cu128", "cu126"))
    indexes = pyproject_deps.parse(text.replace("extra-index-url = [", 'index-url = "https://pypi.org/simple"\nextra-index-url = [')).indexes
    assert [(i.kind, i.pytorch_tag, i.uv_only) for i in indexes] == [("index", None, True), ("extra", "cu128", True)]


def test_a_uv_source_that_sends_a_declared_package_to_a_wheel_installs_that_wheel():
    # skyrl-train 0.2.0's form: the core flash-attn comes from a release wheel [S236]; the URL is reported too, since
    # it is what uv installs, and never edited (the file is what it is)
    wheel = ("https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.0.post2/"
             "flash_attn-2.8.0.post2+cu12torch2.7cxx11abiFALSE-cp312-cp312-linux_x86_64.whl")
    head = '[project]\nname = "x"\ndependencies = ["flash-attn"]\n\n[tool.uv.sources]\n'
    assert _found(head + f'flash-attn = {{ url = "{wheel}" }}\n', "sm75") == [("RLC603", 3), ("RLC603", 6)]
    # percent-encoded file names are read as uv reads them; a row for another platform does not apply
    quoted = wheel.replace("+", "%2B")
    assert _found(head + f'flash-attn = [{{ url = "{quoted}", marker = "sys_platform == \'linux\'" }}]\n', "sm75") \
        == [("RLC603", 3), ("RLC603", 6)]
    assert _found(head + f'flash-attn = [{{ url = "{wheel}", marker = "sys_platform == \'darwin\'" }}]\n', "sm75") \
        == [("RLC603", 3)]
    # a package the project does not declare is not routed [S180]; a wheel of another distribution names nothing
    assert _found('[project]\nname = "x"\n\n[tool.uv.sources]\n' + f'flash-attn = {{ url = "{wheel}" }}\n', "sm75") == []
    assert _found(head + f'flash-attn = {{ url = "{wheel.replace("flash_attn-", "other-")}" }}\n', "sm75") == [("RLC603", 3)]
    # the wheel is installed where the package is asked for: only with the extra that asks for it
    group = pyproject_deps.parse('[project]\nname = "x"\n[project.optional-dependencies]\ngpu = ["flash-attn"]\n'
                                 f'[tool.uv.sources]\nflash-attn = {{ url = "{wheel}" }}\n')
    assert [(r.name, r.spec, r.extra, r.editable) for r in group.requirements] == [
        ("flash-attn", "", "gpu", True), ("flash-attn", "==2.8.0.post2+cu12torch2.7cxx11abiFALSE", "gpu", False)]



def test_a_uv_source_that_sends_a_declared_package_to_a_git_commit_or_an_index_installs_it_from_there():
    # prime-rl 0.7.0-0.8.1's forms (pyproject.toml:197, :216 at v0.8.0): FlashAttention-4 from a commit of its
    # repository, FlashAttention-3 from a named index; each row is uv's install of the declared package [S236][S180]
    head = '[project]\nname = "x"\ndependencies = ["flash-attn-4", "flash_attn_3"]\n\n[tool.uv.sources]\n'
    rows = ('flash-attn-4 = { git = "https://github.com/Dao-AILab/flash-attention.git", subdirectory = "flash_attn/cute", '
            'rev = "96bd151" }\nflash_attn_3 = { index = "pytorch-cu128-test" }\n')
    assert _found(head + rows, "sm75") == [("RLC603", 3), ("RLC603", 3), ("RLC603", 6), ("RLC603", 7)]
    assert not _found(head + rows, "sm90")
    group = pyproject_deps.parse(head + rows)
    sourced = [r for r in group.requirements if r.uv_source]
    # no release: judged by what every release needs, never edited, at the row's line
    assert [(r.name, r.spec, r.uv_source, r.version_known, r.editable) for r in sourced] == [
        ("flash-attn-4", "", "git", False, False), ("flash-attn-3", "", "index", False, False)]
    assert [(head + rows)[r.span.start:r.span.end].split(" =")[0] for r in sourced] == ["flash-attn-4", "flash_attn_3"]
    # a list of rows: the one for Linux, in the extra that asks for the package; another platform's row is no install
    listed = ('[project]\nname = "x"\n[project.optional-dependencies]\nfa3 = ["flash_attn_3"]\n[tool.uv.sources]\n'
              'flash_attn_3 = [\n  { index = "mac", marker = "sys_platform == \'darwin\'" },\n'
              '  { index = "cu128-test", marker = "sys_platform == \'linux\'" },\n]\n')
    [row] = [r for r in pyproject_deps.parse(listed).requirements if r.uv_source]
    assert (row.extra, listed[row.span.start:row.span.end]) == ("fa3", '{ index = "cu128-test", marker = "sys_platform == \'linux\'" },')
    # an engine's row is where uv takes it from: the engine is reported where a config selects it, its torch at the
    # declaration (skyrl 0.3.0's `vllm = [{ index = "vllm-cu129" }]`); torch's own rows are its route
    engine = ('[project]\nname = "x"\n[project.optional-dependencies]\nfsdp = ["vllm==0.10.1.1", "torchvision"]\n'
              '[tool.uv.sources]\nvllm = { index = "vllm-cu129" }\ntorchvision = { index = "cu128" }\n')
    assert not [line for _, line in _found(engine, "sm61") if line > 5]
    assert not [r for r in pyproject_deps.parse(engine).requirements if r.name == "torchvision" and r.uv_source]
    # pip never reads the row: `pip install .[fa3]` installs the declaration only
    from rlcompat.knowledge.install_steps import extra_requirements
    import tempfile, os
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "pyproject.toml"), "w") as fh:
            fh.write(listed)
        assert [(r.name, r.uv_source) for r, _, _ in extra_requirements(d, ("fa3",))] == [("flash-attn-3", "")]


OVERRIDE = ('[project]\nname = "x"\ndependencies = ["peft"]\n\n[project.optional-dependencies]\n'
            'fsdp = ["torch==2.13.0; sys_platform == \'linux\'"]\ndev = ["torch"]\n\n'
            '[tool.uv]\noverride-dependencies = [\n'
            '    "nixl-cu12; sys_platform == \'never\'",\n'
            '    "torch==2.13.0; sys_platform == \'linux\'",\n'
            '    "tilelang==0.1.13",\n]\n')


def test_a_uv_override_of_torch_is_uv_s_install_of_every_torch_the_project_declares():
    # skyrl 0.4.0 pyproject.toml:333: `[tool.uv] override-dependencies` replaces every torch requirement [S243]; pip
    # reads no [tool.uv] table, so the row is uv's alone: one requirement per extra that declares torch, uv only
    group = pyproject_deps.parse(OVERRIDE)
    overrides = [r for r in group.requirements if r.uv_only]
    assert [(r.name, r.spec, r.extra) for r in overrides] == [("torch", "==2.13.0", "fsdp"), ("torch", "==2.13.0", "dev")]
    assert all(OVERRIDE[r.span.start:r.span.end] == "torch==2.13.0" and not r.editable for r in overrides)
    # no route: uv takes PyPI's cu130 build of torch 2.13.0 (no sm_60/61): reported once, on the override's line
    found = [f for f in scan_source(OVERRIDE, resolve_target("sm61"), "pyproject.toml", "pyproject") if f.code == "RLC601"]
    assert [f.location.line for f in found] == [6, 7, 12]
    assert found[-1].message.startswith("uv installs torch 2.13.0 for every torch requirement ([tool.uv] override-dependencies")
    assert not _found(OVERRIDE, "sm75")  # cu130 builds carry sm_75


def test_a_uv_override_is_judged_through_the_torch_route_and_reported_once():
    routed = OVERRIDE + ('\n[tool.uv.sources]\ntorch = [{ index = "cu130", marker = "sys_platform == \'linux\'" }]\n\n'
                         '[[tool.uv.index]]\nname = "cu130"\nurl = "https://download.pytorch.org/whl/cu130"\nexplicit = true\n')
    found = [f for f in scan_source(routed, resolve_target("sm61"), "pyproject.toml", "pyproject") if f.code == "RLC601"]
    assert [f.location.line for f in found].count(12) == 1
    assert "for torch==2.13.0 ([tool.uv] override-dependencies) from the cu130 index" in next(
        f.message for f in found if f.location.line == 12)


def test_a_uv_override_of_a_package_the_project_does_not_declare_or_off_linux_installs_nothing():
    # an override adds no dependency [S243]; a marker that cannot hold on Linux drops the row
    text = ('[project]\nname = "x"\ndependencies = ["peft"]\n\n[tool.uv]\noverride-dependencies = [\n'
            '    "torch==2.13.0",\n    "flash-attn==2.8.3; sys_platform == \'darwin\'",\n]\n')
    assert not [r for r in pyproject_deps.parse(text).requirements if r.uv_only]
    assert not _found(text)


def test_requirements_are_read_whatever_the_order_of_the_file_s_tables():
    # prime-rl's pyproject.toml puts [build-system] last: its requirements were looked for after it and lost
    text = ('[project]\nname = "x"\ndependencies = ["torch==2.6.0", "numpy"]\n\n'
            '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n')
    names = [r.name for r in pyproject_deps.parse(text).requirements]
    assert names == ["hatchling", "torch", "numpy"]
    assert _found(text, "sm61") == []  # PyPI's 2.6.0 is the cu124 build, with sm_60 ...
    assert _found(text.replace("torch==2.6.0", "torch==2.11.0")) == [("RLC601", 3)]  # ... 2.11's cu130: none for sm61


def test_a_torch_range_sent_to_an_index_resolves_to_that_index_s_newest_torch():
    # `torch>=2.9.0` routed to cu128 (prime-rl 0.7.0): uv takes 2.11, the last release cu128 builds (sm_75 and up),
    # not PyPI's newest (which cu128 does not have); the route and the override row are reported, sm75 has kernels
    text = ('[project]\nname = "x"\ndependencies = ["torch>=2.9.0"]\n\n[tool.uv]\noverride-dependencies = ["torch>=2.9.0"]\n\n'
            '[tool.uv.sources]\ntorch = { index = "cu" }\n\n' + INDEX.format(name="cu", explicit="true"))
    found = _found(text)
    assert ("RLC601", 6) in found and ("RLC601", 9) in found
    messages = [f.message for f in scan_source(text, resolve_target("sm61"), "pyproject.toml", "pyproject")
                if f.code == "RLC601" and f.location.line in (6, 9)]
    assert all("torch 2.11" in m for m in messages)
    assert not [f for f in _found(text, "sm75") if f[1] in (6, 9)]


def test_a_wheel_row_for_another_machine_installs_nothing_on_the_card_s():
    # P40 and T4 hosts are x86-64: the aarch64 row of a wheel list (prime-rl's vllm source) is not their install
    text = ('[project]\nname = "x"\ndependencies = ["vllm>=0.24.0"]\n\n[tool.uv.sources]\nvllm = [\n'
            '  { url = "https://example.org/vllm-0.24.0+cu129-cp38-abi3-manylinux_2_28_x86_64.whl", '
            'marker = "platform_machine == \'x86_64\'" },\n'
            '  { url = "https://example.org/vllm-0.24.0+cu129-cp38-abi3-manylinux_2_28_aarch64.whl", '
            'marker = "platform_machine == \'aarch64\'" },\n]\n')
    lines = {line for _, line in _found(text)}
    assert 7 in lines and 8 not in lines
    assert pyproject_deps._on_linux("platform_machine != 'aarch64'") and not pyproject_deps._on_linux(
        "sys_platform == 'linux' and platform_machine == 'aarch64'")


def test_a_package_pinned_to_one_release_holds_the_torch_of_the_whole_install():
    # ReCall's setup.py: 'torch' and 'sglang' unbounded beside vllm==0.8.4, which pins torch==2.6.0 (PyPI's cu124
    # build has sm_60): pip installs 2.6.0 and takes an sglang that accepts it, so neither is judged by its newest
    held = "vllm==0.8.4\ntorch\nsglang\n"
    assert _found(held, path="requirements.txt", language="requirements") == []
    # without the pin, an unbounded torch is the newest release (cu130 on PyPI: no sm_60/61)
    assert ("RLC601", 1) in _found("torch\nsglang\n", path="requirements.txt", language="requirements")


def test_a_release_wheel_a_uv_source_names_holds_torchvision_and_torchaudio_to_its_torch():
    # prime-rl v0.8.1.dev67: unbounded torchvision and torchaudio beside vllm sent to its 0.26.0+cu129 release wheel,
    # which pins torch==2.11.0, torchvision==0.26.0, torchaudio==2.11.0 [S320]: uv installs those, not the newest
    # torchvision (which asks for a newer torch); the wheel row reports the torch it brings
    text = ('[project]\nname = "x"\ndependencies = ["torch>=2.9.0", "torchvision", "torchaudio", "vllm>=0.26.0"]\n\n'
            '[tool.uv.sources]\ntorch = { index = "cu" }\nvllm = [\n'
            '  { url = "https://example.org/vllm-0.26.0+cu129-cp38-abi3-manylinux_2_28_x86_64.whl", '
            'marker = "platform_machine == \'x86_64\'" },\n]\n\n' + INDEX.format(name="cu", explicit="true"))
    findings = [f for f in scan_source(text, resolve_target("sm61"), "pyproject.toml", "pyproject")
                if f.code == "RLC601"]
    assert not [f for f in findings if "torchvision" in f.message or "torchaudio" in f.message]
    [row] = [f for f in findings if f.location.line == 8]
    assert "installs torch 2.11.0" in row.message and "vllm-0.26.0" in row.message
    assert torch_required_by("vllm", "==0.26.0+cu129").torch == "2.11.0"
    # the range `vllm>=0.26.0` installs the wheel's release under uv, not PyPI's newest vllm (and its newer torch)
    assert not [f for f in findings if "2.14" in f.message]
    assert any("vllm>=0.26.0, sent to vllm==0.26.0+cu129 by [tool.uv.sources]" in f.message for f in findings)

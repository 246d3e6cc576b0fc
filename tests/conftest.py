from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# RLC401 offers `rollout.name=hf` only where rlcompat's verl plugin is installed (or asked for): the tests fix that
# choice so that they do not depend on which extras this environment has (tests/test_verl_plugin_rule.py tests both).
os.environ.setdefault("RLCOMPAT_HF_ROLLOUT", "1")


@pytest.fixture
def run_cli(tmp_path):
    """Run the real `rlcompat` CLI in a subprocess: returns (exit code, stdout, stderr)."""
    import subprocess

    def run(*args, cwd=None, env=None):
        full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        proc = subprocess.run([sys.executable, "-m", "rlcompat", *args], capture_output=True, text=True,
                              cwd=cwd or tmp_path, env=full_env, timeout=300)
        return proc.returncode, proc.stdout, proc.stderr

    return run


@pytest.fixture
def fresh_verl_detection():
    """Trees' identities, verl's package root and version are cached per path; tests that build verl trees under tmp_path (whose
    paths repeat across tests) clear the caches before and after."""
    from rlcompat.knowledge import identity, verl_config

    def clear():
        identity.clear_caches()
        verl_config.package_root.cache_clear()

    clear()
    yield
    clear()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny seeded causal LM's folder and its tokenizer (the hf rollout's tests), built once per test module."""
    transformers = pytest.importorskip("transformers")
    from rlcompat.verify.tiny_model import build_tiny_model

    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "m", seed=0)
    return folder, transformers.AutoTokenizer.from_pretrained(folder)


@pytest.fixture
def installed_verl_091() -> str:
    """The folder of the verl package this Python imports, where it is release 0.9.1; the test skips otherwise."""
    import importlib.util

    from rlcompat.knowledge import verl_config

    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("verl is not installed")
    package = spec.submodule_search_locations[0]
    if verl_config.package_release(package)[0] != "0.9.1":
        pytest.skip("the installed verl is not 0.9.1")
    return package

"""rlcompat's release number, in a module of its own: the modules that print or key on it read it here, not
from the package, whose public API (rlcompat/__init__.py) imports the runner lazily."""

__version__ = "0.1.0"

HOME = "https://github.com/rlcompat/rlcompat"  # where releases are tagged (docs/releasing.md)


def install_command(extra: str) -> str:
    """What a user runs to add an extra: rlcompat is not on PyPI, so it installs from git at this release's tag."""
    return f'pip install "rlcompat[{extra}] @ git+{HOME}@v{__version__}"'

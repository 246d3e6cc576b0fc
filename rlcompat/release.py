"""rlcompat's release number, in a module of its own: the modules that print or key on it read it here, not
from the package, whose public API (rlcompat/__init__.py) imports the engine lazily."""

__version__ = "0.1.0"

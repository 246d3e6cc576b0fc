"""The `verl.plugins` entry point. verl imports it (`EntryPoint.load()`, verl/__init__.py:64) and calls nothing, so
registering happens on import."""

from rlcompat.verl_plugin import register

register()

"""The Python front end's speed machinery, in one place, behind one switch.

A cold scan is mostly LibCST: its import, its parse and its position provider, and its tree is most of a big file's
memory. What this package does about it (why and how much, measured: docs/performance.md, "Where the time goes"):

| module | what it does | with `RLCOMPAT_PLAIN_LIBCST=1` |
|---|---|---|
| `lazy` | a stand-in module for `libcst` in `sys.modules`, loaded on first use | `libcst` imported at once |
| `narrow` | statements (and parts of big statements) no rule can match are left out before the parse | the whole module is parsed |
| `gate` | a file is run through a rule only where it spells what the rule declares it needs to see (`Rule.resolves_from`, `keywords`, `calls`, `spelled`, `requires`) | its triggers alone decide |
| `forked` | a big file's narrowing pass and its Python settings read in two forked processes while this one loads LibCST (only where LibCST is not loaded yet) | read here, one after the other |
| `chunks` | CPython's tree of a big text (narrowing, Python settings, fix's compile check) built a few top-level statements at a time | the whole text at once |
| `parse` | LibCST's node validation is skipped while its parser builds the tree | `libcst.parse_module` as is |
| `batches` | a big text is parsed, walked and located a few top-level statements at a time, each part's tree dropped before the next | the whole module at once |
| `heap` | the C heap a big file's trees leave behind is given back to the system (glibc's `malloc_trim`) | kept |
| `positions` | positions of the innermost statement only, regenerated alone | LibCST's `PositionProvider` on the module |
| `collector` | the cyclic garbage collector is off for a CLI run, what is alive frozen at its end | the collector as Python leaves it |
| `walk` | one pre-order walk over the dataclass fields (the same in both modes) | the same |

Outside the Python front end (rlcompat/lang/) nothing imports these modules but `hooks`, what the pipeline, the CLI
and the rule catalog ask of the machinery, and this package's `plain` switch (tests/test_import_graph.py), so that
the machinery stays the front end's private detail and can change without them.

The plain mode is the reference the fast one is held to: `tests/test_plain_libcst.py` scans and fixes every fixture
and a sample of verl both ways and requires byte-identical findings and fixed text. Set the variable to compare or
to rule the machinery out when a result looks wrong; it costs several times the time and memory.
"""

from __future__ import annotations

import os

PLAIN_ENV = "RLCOMPAT_PLAIN_LIBCST"


def plain() -> bool:
    """Whether to run plain LibCST (read on every call, so a test or a caller may switch it)."""
    return os.environ.get(PLAIN_ENV, "") not in ("", "0")


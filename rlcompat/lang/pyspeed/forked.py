"""A big text's narrowing pass and its Python settings read in forked processes while this one loads LibCST.

For a big file checked where LibCST is not loaded yet (a scan of one or a few files), the work before its LibCST parse
is three parts that need nothing of each other: LibCST's import (about 0.15 s on the project's machine), the
narrowing pass (CPython's parse of every chunk and the choice of what stays: 0.3 s for torch's 1.4 MB
`common_methods_invocations.py`) and the settings reader (the same parse and its own walk: 0.3 s). One after another
they took 0.6 s there; here the two passes run in two forked processes, each over its own parse of the chunks, while
this one imports LibCST, and their results come back pickled (what the narrowing keeps, where the chunks and the
top-level statements are, the settings read). Each child runs the same code the process would have run, so the
results are the same; a child that fails, or a machine where a fork cannot help (fewer than `MIN_IDLE_CPUS` idle
CPUs, no `os.fork`, threads running, `RLCOMPAT_PLAIN_LIBCST=1`), leaves the work to this process as before.

Where LibCST is loaded already (a tree scan loads it before its workers fork) nothing is forked: there is nothing to
overlap, and the workers keep every CPU busy.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

from rlcompat.lang.pyspeed import chunks
from rlcompat.lang.pyspeed.chunks import WHOLE_MAX_CHARS, Pass

# Texts this long or longer are read in forked processes. Below it LibCST's import is most of what there is to overlap,
# and a fork and the pickled results cost a few ms.
FORK_MIN_CHARS = 4 * WHOLE_MAX_CHARS
# CPUs that must be idle (this process's CPUs less the system's load average over the last minute): the children
# gain only where they run beside this process. Three processes sharing what is left of two busy cores took longer
# than one (torch's 1.4 MB file on the project's machine at load 1.8: 1.50 s against 1.21 s).
MIN_IDLE_CPUS = 1.5


def worth_forking(text: str) -> bool:
    """Whether `text`'s passes are read in forked processes (the module docstring says when)."""
    # A text read in chunks keeps no whole tree for later (`chunks.Pass.tree`): the children's passes leave nothing
    # behind that the pass here would have.
    return (len(text) >= FORK_MIN_CHARS and chunks.in_chunks(text) and hasattr(os, "fork") and not libcst_loaded()
            and threading.active_count() == 1 and _idle_cpus() >= MIN_IDLE_CPUS)


def libcst_loaded() -> bool:
    """Whether LibCST's modules are loaded (not only its stand-in: `lazy.py`)."""
    from rlcompat.lang.pyspeed.lazy import is_loaded

    return is_loaded("libcst")


def _idle_cpus() -> float:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        return cpus - os.getloadavg()[0]
    except (AttributeError, OSError):
        return cpus


class Forked:
    """`work()` run in a forked process (it returns something picklable, never None); `result()` its value, or None
    where the child failed or no child could be started (the caller then does the work itself)."""

    def __init__(self, work: Callable[[], Any]) -> None:
        import pickle  # here, not at the top: every scan imports this module, few fork

        self.pid: int | None = None
        try:
            read, write = os.pipe()
        except OSError:
            return
        try:
            pid = os.fork()
        except OSError:  # no process to spare: the work is done here
            os.close(read)
            os.close(write)
            return
        if pid == 0:  # the child: write the pickled value and leave at once (no atexit handlers, no stdio flush)
            code = 1
            try:
                os.close(read)
                # pickled whole before the first write: a write blocks until the parent reads, and the parent may be
                # reading the other child first
                data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as out:
                    out.write(data)
                code = 0
            except BaseException:  # noqa: BLE001 - whatever went wrong, the parent does the work again itself
                pass
            finally:
                os._exit(code)
        os.close(write)
        self.pid, self.read = pid, read

    def result(self) -> Any | None:
        import pickle
        import signal

        if self.pid is None:
            return None
        data = b""
        try:
            with os.fdopen(self.read, "rb") as got:
                data = got.read()
        except BaseException:
            try:
                os.kill(self.pid, signal.SIGKILL)  # interrupted: the child's work is of no use any more
            except ProcessLookupError:
                pass
            raise
        finally:
            _, status = os.waitpid(self.pid, 0)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and data):
            return None
        return pickle.loads(data)


def narrow(text: str, rules, triggers: tuple[str, ...] | None, spells: Callable[[str], bool] | None = None):
    """What the narrowing pass over `text` for the Python `rules` gives, with a settings reader for `triggers` (None:
    no settings read) as one of its readers: (the narrowed text or None, the pass learnt or None, the settings left
    in it as the reader leaves them), the two read in forked processes while this one loads LibCST; None where a
    child failed (the caller then runs the pass itself). `spells`: whether `text` spells a word (spelled.py)."""
    from rlcompat.lang.pysettings import keep_in, settings_of
    from rlcompat.lang.pyspeed.lazy import load

    settings = Forked(lambda: (settings_of(text, triggers, spells=spells),)) if triggers is not None else None
    narrowing = Forked(lambda: _narrowed(text, rules, spells))
    try:
        load("libcst")  # what the parse after the pass needs, loaded while the children read
    finally:  # every child is waited for, whatever happened here
        got = narrowing.result()
        read = settings.result() if settings is not None else None
    if got is None or (settings is not None and read is None):
        return None
    narrowed, learnt = got
    if learnt is None:  # the pass did not get through the text: it learnt nothing, and no reader finished
        return narrowed, None
    seen = Pass(text, *learnt)
    if read is not None:
        keep_in(seen, triggers, read[0])
    return narrowed, seen


def _narrowed(text: str, rules, spells: Callable[[str], bool] | None) -> tuple:
    """In a child: the narrowed text and what the pass learnt (where the top-level statements and the chunks are;
    a big text keeps no whole tree)."""
    from rlcompat.lang.pyspeed import narrow as pynarrow

    learnt: list[Pass] = []
    narrowed = pynarrow.narrow(text, rules, (), learnt.append, spells)
    return narrowed, (learnt[-1].spans, learnt[-1].cuts) if learnt else None

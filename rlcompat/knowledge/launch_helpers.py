"""Other projects' functions that run a training command whose flags a Python launcher composes as a string
(data/launch_helpers.toml): which parameter holds the flags and which entry script the command runs."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files


@dataclass(frozen=True)
class LaunchHelper:
    qualname: str  # "miles.utils.external_utils.command_utils.execute_train"
    argument: str  # the parameter holding the command's flags
    position: int  # its position when passed positionally
    entry: str  # the script the command runs by default ("train.py")
    entry_argument: str  # the parameter naming another entry script
    entry_position: int
    unread_unless_none: tuple[tuple[str, int], ...]  # (parameter, position): unless None, it adds words not in the file
    proof: str

    @property
    def function(self) -> str:
        return self.qualname.rsplit(".", 1)[1]


@lru_cache(maxsize=1)
def helpers() -> dict[str, LaunchHelper]:
    return {row["qualname"]: _helper(row) for row in files.load("launch_helpers.toml").get("helper", ())}


def _helper(row: dict) -> LaunchHelper:
    unread = tuple((u["name"], int(u["position"])) for u in row.get("unread_unless_none", ()))
    return LaunchHelper(row["qualname"], row["argument"], int(row["position"]), row["entry"], row["entry_argument"],
                        int(row["entry_position"]), unread, row["proof"])


@lru_cache(maxsize=1)
def function_names() -> tuple[str, ...]:
    """The helpers' function names: a file that spells none of them calls none (a cheap test before any parse)."""
    return tuple(sorted({h.function for h in helpers().values()}))

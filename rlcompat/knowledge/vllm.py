"""rlcompat/knowledge/data/vllm.toml: what vLLM's quantization methods, KV-cache dtypes and attention backends need, for the rules
over scripts and Python (RLC405, RLC406)."""

from __future__ import annotations

import re
from functools import lru_cache

from rlcompat.knowledge import files, versions


@lru_cache(maxsize=1)
def table() -> dict:
    return files.load("vllm.toml")


def minimum(name: str, value: str) -> dict | None:
    """The entry for `value` in the table `name` ("quantization", "kv_cache_dtype", "attention_backend"), or None."""
    return table()[name].get(value.strip().lower() if name != "attention_backend" else value.strip())


def refused(name: str, value: str, capability: tuple[int, int]) -> dict | None:
    """The entry when vLLM refuses `value` on `capability`, else None."""
    entry = minimum(name, value)
    if entry is None:
        return None
    return entry if capability < versions.capability(entry["min_capability"]) else None


def use_v1() -> dict:
    """`[use_v1]`: the releases that refuse VLLM_USE_V1=1 below `min_capability`, where, and their error."""
    return table()["use_v1"]


def refuses_use_v1(release: str, capability: tuple[int, int]) -> bool:
    """Whether vLLM `release` raises for VLLM_USE_V1=1 on `capability`."""
    row = use_v1()
    return (capability < versions.capability(row["min_capability"])
            and versions.release(row["first"]) <= versions.release(release) <= versions.release(row["last"]))


def auto_dtype() -> dict:
    """`[auto_dtype]`: through which release an engine without a dtype keeps a bf16 checkpoint in bf16 (and refuses it
    below `min_capability`), where, and the error."""
    return table()["auto_dtype"]


def keeps_checkpoint_bf16(release: str) -> bool:
    """Whether vLLM `release` loads a bf16 checkpoint in bf16 when no dtype is given."""
    return versions.release(release) <= versions.release(auto_dtype()["keeps_bf16_through"])


def attention_backend_request() -> dict:
    """`[attention_backend_request]`: the VLLM_ATTENTION_BACKEND values the releases through `falls_back_through`
    replace below `min_capability` with a backend that runs there, where, and the source."""
    return table()["attention_backend_request"]


def request_replaced(value: str, capability: tuple[int, int]) -> bool:
    """Whether VLLM_ATTENTION_BACKEND=`value` is one those releases replace on `capability`."""
    row = attention_backend_request()
    return (value.strip().strip("'\"") in row["values"]
            and capability < versions.capability(row["min_capability"]))


def image_release(image: str) -> str | None:
    """The vLLM release an official vLLM image reference holds (`vllm/vllm-openai:v0.8.5` -> 0.8.5, `[image]`);
    None for another image, a moving tag (`latest`, `nightly`) or a digest."""
    repository, tag = _reference(image)
    if repository not in table()["image"]["repositories"] or tag is None:
        return None
    m = re.match(table()["image"]["release_tag"], tag)
    return m.group("release") if m else None


def image_entrypoint(image: str) -> tuple[str, ...] | None:
    """The program an official vLLM image runs with a container's arguments (its ENTRYPOINT), any tag; else None."""
    repository, _ = _reference(image)
    return tuple(table()["image"]["entrypoint"]) if repository in table()["image"]["repositories"] else None


def _reference(image: str) -> tuple[str, str | None]:
    """(repository lowercased, tag or None) of an image reference (`repo:tag@digest`, `host:port/repo:tag`)."""
    name = image.strip().partition("@")[0]
    repository, colon, tag = name.rpartition(":")
    if not colon or "/" in tag:
        return name.lower(), None
    return repository.lower(), tag

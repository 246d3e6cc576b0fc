"""OmegaConf interpolations in verl's configs: `${oc.select:KEY,DEFAULT}` takes KEY's value, or DEFAULT when KEY
is unset. verl's config groups use it to let one role follow another (ref/ref.yaml: the ref's use_torch_compile
follows the actor's, defaulting to true). A rule that judges a value judges the default, unless the view sets KEY
itself (then KEY's own line is where the value is written and judged)."""

from __future__ import annotations

import dataclasses
import re

from rlcompat.lang.settings import ConfigView, Setting, Span

_OC_SELECT = re.compile(r"\$\{oc\.select:\s*([\w.]+)\s*,\s*(.*?)\s*\}")


def select_default(view: ConfigView, setting: Setting) -> Setting | None:
    """The setting as a rule should judge it: itself when it is not an `oc.select`; a setting for the default
    (value and span of the default inside the interpolation) when the followed key is not set in the view; None
    when the view sets the followed key or the interpolation has no plain default."""
    value = setting.value
    if not value or "${" not in value:
        return setting
    match = _OC_SELECT.fullmatch(value.strip())
    if match is None or setting.value_span is None:
        return None
    followed, default = match.group(1), match.group(2)
    if view.get(followed) is not None or not default or default[0] in "${[":
        return None
    start = setting.value_span.start + value.index(match.group(0)) + match.start(2)
    end = start + len(default)
    if default[0] in "'\"" and default[-1] == default[0] and len(default) > 1:
        default, start, end = default[1:-1], start + 1, end - 1
    via = f"the default of ${{oc.select:{followed},...}}, taken while {followed} is unset"
    return dataclasses.replace(setting, value=default, value_span=Span(start, end), via=via)


def followed_key(setting: Setting) -> str | None:
    """KEY of a setting written as `${oc.select:KEY,DEFAULT}`; None for any other value."""
    match = _OC_SELECT.fullmatch((setting.value or "").strip())
    return match.group(1) if match else None

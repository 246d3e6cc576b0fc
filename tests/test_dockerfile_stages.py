"""Which build stages of a Dockerfile only `--from=` reads (BaseImage.copied_only) and which the default build never
reaches (BaseImage.unreached): RLC602 judges the image a container runs, not a compiler-less stage whose files the
final image copies (prime-rl 0.7.0's CUDA 13 runtime stage), nor a stage nothing names (open-instruct's CUDA 13 stage,
left out by its ARG's default)."""

from __future__ import annotations

from rlcompat.api import scan_source
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang import dockerfile


def _copied(text: str) -> list[bool]:
    return [image.copied_only for image in dockerfile.parse(text).group.images]


def _unreached(text: str) -> list[bool]:
    return [image.unreached for image in dockerfile.parse(text).group.images]


def _rlc602_lines(text: str) -> list[int]:
    return [f.location.line for f in scan_source(text, resolve_target("sm61"), "Dockerfile", "dockerfile")
            if f.code == "RLC602"]


RUNTIME13 = "FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04 AS {name}\n"
FINAL = "FROM nvidia/cuda:12.8.1-base-ubuntu24.04\n"


def test_a_stage_only_copied_from_by_name_index_or_mount():
    for use in ("COPY --from=cu13 /a /b\n", "COPY --from=0 /a /b\n", "ADD --from=CU13 /a /b\n",
                "RUN --mount=type=bind,from=cu13,source=/a,target=/b cp /b /c\n"):
        assert _copied(RUNTIME13.format(name="cu13") + FINAL + use) == [True, False], use
        assert _rlc602_lines(RUNTIME13.format(name="cu13") + FINAL + use) == [], use


def test_a_stage_built_on_never_copied_or_last_is_the_run_image():
    built_on = RUNTIME13.format(name="cu13") + "FROM cu13 AS app\nCOPY --from=cu13 /a /b\n"
    assert _copied(built_on) == [False]  # `FROM cu13` has no tag of its own: one image
    assert _rlc602_lines(built_on) == [1]
    last = FINAL.replace("\n", " AS base\n") + RUNTIME13.format(name="cu13") + "COPY --from=base /a /b\n"
    assert _copied(last) == [True, False] and _rlc602_lines(last) == [2]


def test_a_stage_nothing_names_is_not_built():
    never_named = RUNTIME13.format(name="cu13") + FINAL
    assert _unreached(never_named) == [True, False] and _rlc602_lines(never_named) == []


def test_the_last_from_names_its_stage_through_the_arg_default():
    stages = ("ARG CUDA_VERSION={v}\nFROM nvidia/cuda:12.8.1-devel-ubuntu22.04 AS cuda12\n"
              "FROM nvidia/cuda:13.0.3-devel-ubuntu22.04 AS cuda13\nFROM cuda${{CUDA_VERSION}}\n")
    assert _unreached(stages.format(v="12")) == [False, True] and _rlc602_lines(stages.format(v="12")) == []
    assert _unreached(stages.format(v="13")) == [True, False] and _rlc602_lines(stages.format(v="13")) == [3]


def test_a_from_whose_variable_is_not_known_may_build_on_any_stage():
    unknown = ("FROM nvidia/cuda:12.8.1-devel-ubuntu22.04 AS cuda12\n"
               "FROM nvidia/cuda:13.0.3-devel-ubuntu22.04 AS cuda13\nFROM cuda${CUDA_VERSION}\n")
    assert _unreached(unknown) == [False, False] and _rlc602_lines(unknown) == [2]


def test_a_devel_stage_only_copied_from_is_still_judged():
    devel = RUNTIME13.format(name="build").replace("runtime", "devel") + FINAL + "COPY --from=build /w /w\n"
    assert _copied(devel) == [True, False]
    assert _rlc602_lines(devel) == [1]

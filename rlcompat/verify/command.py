"""`rlcompat verify`: the command function. Nothing heavy at import time: torch and verl live in the child process."""

from __future__ import annotations

import importlib.util
import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from rlcompat.release import install_command


class Device(str, Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class Strategy(str, Enum):
    fsdp2 = "fsdp2"
    fsdp = "fsdp"


class Algo(str, Enum):
    gae = "gae"
    grpo = "grpo"


class VerifyFormat(str, Enum):
    text = "text"
    json = "json"


def verify_command(
    path: Annotated[str, typer.Argument(help="The verl package directory under test, or the directory that contains verl/.")],
    target: Annotated[Optional[str], typer.Option("--target", "-t", help="GPU to emulate or check: sm61, 7.5, P40, T4, ... or auto.")] = None,
    device: Annotated[Device, typer.Option("--device", help="Where to run the step: auto (CUDA if present), cpu or cuda.")] = Device.auto,
    strategy: Annotated[Strategy, typer.Option("--strategy", help="verl FSDP engine: fsdp2 or fsdp (FSDP1).")] = Strategy.fsdp2,
    algo: Annotated[Algo, typer.Option("--algo", help="gae (actor, reference and critic) or grpo (no critic).")] = Algo.gae,
    steps: Annotated[Optional[int], typer.Option("--steps", min=1, max=200, help="PPO steps to run (1; 2 with --trainer).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the tiny model and the step.")] = 0,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temp folder (tiny model, child log, result.json).")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds before the child process is stopped.")] = 600.0,
    output_format: Annotated[VerifyFormat, typer.Option("--output-format", help="text or json.")] = VerifyFormat.text,
    trainer: Annotated[bool, typer.Option("--trainer", help="Run verl's own `python -m verl.trainer.main_ppo` (Ray, agent loop, hf rollout) instead of the fast one-process step; minutes, needs rlcompat[verl].")] = False,
    script: Annotated[Optional[str], typer.Option("--script", help="With --trainer: a launch script whose main_ppo overrides to run, with model, data, batch sizes and steps swapped for tiny ones.")] = None,
    model_size: Annotated[str, typer.Option("--model-size", help="With --trainer: tiny (131k parameters) or 0.5b (a random Qwen2 of Qwen2.5-0.5B's shape).")] = "tiny",
    trace: Annotated[bool, typer.Option("--trace", help="With --trainer: report which of scan's findings in the tree ran during the run (in every process), and which did not.")] = False,
    trace_from: Annotated[Optional[str], typer.Option("--trace-from", help="With --trace: watch the findings of this tree instead (the verl package before `rlcompat fix`), moved line by line onto the verified one: which of the fixed places the run reaches.")] = None,
    gpus: Annotated[int, typer.Option("--gpus", min=1, max=8, help="With --trainer: trainer.n_gpus_per_node, FSDP over this many GPUs (CPU processes with --device cpu), one hf rollout replica on each.")] = 1,
    load_check: Annotated[bool, typer.Option("--load-check", help="Only compose each launch script's config with the tree's own Hydra config (seconds, no torch): the answer for trees that are not verl 0.9.1, which the step cannot run; --script picks one script.")] = False,
) -> None:
    """Run one tiny PPO step through the tree's own verl code under the target GPU's limits; PASS or FAIL."""
    from rlcompat.cli.common import fail
    from rlcompat.knowledge.targets import TargetError, resolve_target
    from rlcompat.verify.report import render_json, render_text
    from rlcompat.verify.result import EXIT_ENV
    from rlcompat.verify.runner import VerifyRequest, VerifyUsageError, resolve_package, run_verify

    if load_check or (not trainer and _not_runnable_by_the_step(path)):
        _load_check(path, script, output_format)
    if not target:
        from rlcompat.config import ConfigError, load_options

        try:
            target = load_options([path], None).target
        except ConfigError as exc:
            raise fail(str(exc))
    if not target:
        raise fail("no target GPU: pass --target (e.g. --target sm61, --target P40, --target auto)")
    try:
        tgt = resolve_target(target)
        package = resolve_package(path)
    except (TargetError, VerifyUsageError) as exc:
        raise fail(str(exc))
    if script and not trainer:
        raise fail("--script needs --trainer (the fast mode does not read launch scripts)")
    if gpus != 1 and not trainer:
        raise fail("--gpus needs --trainer (the fast mode runs one process)")
    if trace and not trainer:
        raise fail("--trace needs --trainer")
    if trace_from and not trace:
        raise fail("--trace-from needs --trace")
    if trace_from:
        try:
            trace_from = str(resolve_package(trace_from))
        except VerifyUsageError as exc:
            raise fail(str(exc))
    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing and not trainer:  # the child would only fail importing them; --trainer checks its own list
        raise fail(f"verify needs {' and '.join(missing)}, not installed in this Python: {install_command('verify')}")
    if trainer:
        from rlcompat.verify.trainer_mode import run_trainer_mode

        result = run_trainer_mode(package, tgt.name, device.value, steps or 2, script, model_size, algo.value, seed,
                                  keep, timeout, fail, gpus, trace, trace_from)
        text = result.pop("_text")
        sys.stdout.write(render_json(result) if output_format is VerifyFormat.json else text)
        sys.stdout.flush()
        raise typer.Exit(int(result.get("exit_code", EXIT_ENV)))
    if output_format is VerifyFormat.text and sys.stderr.isatty():
        typer.echo(f"rlcompat verify: one PPO step of {package} for {tgt.name} ...", err=True)
    result = run_verify(VerifyRequest(package=package, target=tgt.name, device=device.value, strategy=strategy.value,
                                      algo=algo.value, steps=steps or 1, seed=seed, keep=keep, timeout=timeout))
    render = render_json if output_format is VerifyFormat.json else render_text
    sys.stdout.write(render(result))
    sys.stdout.flush()
    raise typer.Exit(int(result.get("exit_code", EXIT_ENV)))


def _not_runnable_by_the_step(path: str) -> bool:
    """A tree whose verl is a fork or another release than 0.9.1: the one-step run adapts 0.9.1's code only."""
    from rlcompat.knowledge.identity import VERL, Identities
    from rlcompat.verify.runner import VerifyUsageError, resolve_package

    try:
        package = resolve_package(path)
    except VerifyUsageError:
        return False
    verl = Identities().for_path(str(package.parent)).get(VERL)
    return verl.how == "fork" or (verl.how == "release" and verl.version != "0.9.1")


def _load_check(path: str, script: str | None, output_format: VerifyFormat) -> None:
    from rlcompat.cli.common import fail
    from rlcompat.verify.load_check import render, run_load_check
    from rlcompat.verify.runner import VerifyUsageError, resolve_package

    try:
        package = resolve_package(path)
    except VerifyUsageError as exc:
        raise fail(str(exc))
    result = run_load_check(package, script)
    sys.stdout.write(render(result, output_format is VerifyFormat.json))
    sys.stdout.flush()
    raise typer.Exit(int(result["exit_code"]))

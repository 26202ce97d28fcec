"""Which options each mode of a command reads: one table, checked before any work.

A command with modes (`memory` for inference or with --train, `perf` with or without --train,
`trace` analytic or --execute) reads some options in one mode only. Given in the other, such an
option would change nothing, and the answer would be confident about a question that was not
asked: `memory --gpus 8 --tp 8` without --train is planned on one GPU. So an option the user
gave (on the command line or from the environment, whatever its value) outside the mode that
reads it is refused by name - "--tp applies only with --train" - until a later issue models it there.

A rule reads the command's parsed values (Enum members as their values), never the SPEC: it
holds before the spec is loaded. The library's own checks stay for API callers; this table is
the command line's, and speaks in flags.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from tfcli.core.errors import BadInputError

Values = Mapping[str, Any]  # a command's parsed values by parameter name
QUANTISED_DTYPES = ("int8", "int4")  # analysis/memory_plan.QUANTISED, without importing numpy


@dataclass(frozen=True)
class ModeRule:
    """`options` are read only where `active` holds of the command's values: in the mode that
    `mode` names as the user turns it on ("with --train"); `otherwise` says why the other mode
    has no use for them."""

    options: tuple[str, ...]
    mode: str
    active: Callable[[Values], bool]
    otherwise: str


def _training(values: Values) -> bool:
    return bool(values.get("train"))


MEMORY_TRAINING_ONLY = ("--gpus", "--tp", "--zero", "--optimizer", "--recompute", "--lora-rank",
                        "--dropout")

MODE_RULES: dict[str, tuple[ModeRule, ...]] = {
    "memory": (
        ModeRule(MEMORY_TRAINING_ONLY, "with --train", _training,
                 "inference is planned on one GPU, with no gradients, optimizer or adapters"),
        ModeRule(("--kv-dtype",), "without --train (inference)", lambda v: not _training(v),
                 "training keeps no KV cache"),
        ModeRule(("--group-size",), "with --dtype int8 or int4",
                 lambda v: v.get("dtype") in QUANTISED_DTYPES,
                 "only quantised weights have groups of weights sharing a scale"),
        ModeRule(("--lora-targets",), "with --lora-rank", lambda v: v.get("lora_rank") is not None,
                 "without adapters there is nothing to target"),
        ModeRule(("--fit",), "with --gpu", lambda v: v.get("gpu") is not None,
                 "the largest batch and seq_len that fit need the memory to fit into"),
    ),
    "perf": (
        ModeRule(("--train-tokens", "--recompute", "--gpus"), "with --train", _training,
                 "prefill and decode are estimated on one accelerator, without backward"),
        ModeRule(("--expert-dtype",), "without --train", lambda v: not _training(v),
                 "training runs on the experts' unpacked weights"),
    ),
    "trace": (
        ModeRule(("--seed",), "with --execute", lambda v: bool(v.get("execute")),
                 "it draws the weights of --execute's forward pass; the analytic trace draws "
                 "nothing"),
    ),
}

# click's ParameterSource names, compared by name: typer vendors its own click (typer._click),
# whose enum is not the installed click's.
_GIVEN = ("COMMANDLINE", "ENVIRONMENT", "PROMPT")


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def refused_option(command: str, values: Values, given: Callable[[str], bool]) -> str | None:
    """The message refusing the first option (in table order) given outside the mode that reads
    it, or None. `values`: parsed values by parameter name; `given(flag)`: the user set it."""
    plain = {name: _plain(value) for name, value in values.items()}
    for rule in MODE_RULES.get(command, ()):
        if rule.active(plain):
            continue
        for flag in rule.options:
            if given(flag):
                return f"{flag} applies only {rule.mode}: {rule.otherwise}"
    return None


def check_option_modes(ctx: Any) -> None:
    """BadInputError for an option of a command given outside the mode that reads it; `ctx` is
    the command's parsed click context (tfcli.cli.guard.GuardedCommand.invoke calls this)."""
    command = ctx.command.name or ""
    if command not in MODE_RULES:
        return
    by_flag = {opt: p.name for p in ctx.command.params for opt in p.opts if p.name}

    def given(flag: str) -> bool:
        name = by_flag.get(flag)
        if name is None:  # a table naming a flag the command lacks: tests/cli catch it
            raise KeyError(f"{command}: no option {flag}")
        source = ctx.get_parameter_source(name)
        return source is not None and source.name in _GIVEN

    message = refused_option(command, ctx.params, given)
    if message is not None:
        raise BadInputError(message)

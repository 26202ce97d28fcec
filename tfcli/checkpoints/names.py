"""Checkpoint tensor names -> tfcli Weights paths: the rules a family's table is made of
(each family's Table lives in its module under tfcli/checkpoints/families).

A Rule maps one checkpoint tensor to one or more Weights paths (dotted attribute / list-index
paths such as `decoder.blocks.3.attn.wq`, the same paths that `tfcli params` components and
`tfcli trace` rows carry). Templates use `{base}` for the base-model prefix (`transformer.` in a
GPT2LMHeadModel, `model.` in a LlamaForCausalLM, `bert.` in BertFor*), `{i}` for the block index
and `{e}` for the expert index (a params component writes both as `*`). A rule whose Weights
paths do not exist for the spec (a bias when `bias: false`, a dense FFN in an MoE block) is
skipped, so a table can list every variant of its family.

Transforms: `copy` keeps the array; `linear` transposes torch nn.Linear's (out, in) to tfcli's
(in, out); `split` cuts an array already (in, out) into equal parts along the last axis, one
per path (GPT-2's fused c_attn into q, k, v; Llama 4's stacked gate_up_proj into gate, up);
`split_linear` transposes a fused nn.Linear (sum of widths, in) and cuts it into the rule's
arrays at the widths the spec gives them (Phi-3's qkv_proj: q | k | v, unequal under GQA;
gate_up_proj: gate | up); `split_heads3` is that for a fused q/k/v whose rows are head-major,
each head's q, k, v together (GPT-NeoX's query_key_value, (H, 3, d_head, in));
`split_grouped_qkv` cuts Falcon's query_key_value, grouped per key/value head: (n_kv, heads
per group + 2, d_head, in), the group's queries, then its key and value. `deinterleave` deals
the last axis out to the rule's arrays in turn (gpt-oss's gate_up_proj: gate 0::2, up 1::2).
`squeeze` drops a leading axis of 1 (ERNIE 4.5's (1, E) e_score_correction_bias).

A `stacked` rule reads one tensor holding every expert of a block along its first axis
(GraniteMoE's input_linear (E, 2 d_ff, d)): its `{e}`-templated Weights paths are filled for each
expert in turn, each slice taking the rule's transform as a tensor of its own would.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

from tfcli.spec.model import Spec

Transform = Literal["copy", "linear", "split", "split_linear", "split_heads3",
                    "split_grouped_qkv", "deinterleave", "squeeze"]


def always(spec: Spec) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    hf: str  # checkpoint name template
    ours: tuple[str, ...]  # Weights path template(s): one per part (split, split_linear ...)
    transform: Transform = "copy"
    when: Callable[[Spec], bool] = always  # extra condition (T5's gated vs plain FFN names)
    stacked: bool = False  # one tensor (n_experts, ...): every expert's along the first axis


@dataclass(frozen=True)
class Table:
    bases: tuple[str, ...]  # base-model prefixes, tried in order against `anchor`
    anchor: str  # a tensor (without base) that every checkpoint of the family has
    rules: tuple[Rule, ...]
    ignored: tuple[str, ...] = ()  # regexes (re.search) of tensors known to be unused
    tied_copies: tuple[str, ...] = ()  # duplicates of the embedding, ignored when tied
    renames: tuple[tuple[str, str], ...] = ()  # (old suffix, new suffix)


def expected_shape(rule: Rule, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The checkpoint shape that `rule` turns into arrays of `shapes` (the loader checks it
    before reading; `tfcli params` compares checkpoint headers with it)."""
    if rule.stacked:  # shapes: each expert's pieces in turn
        per_expert = len(rule.ours)
        return (len(shapes) // per_expert, *expected_shape(unstacked(rule), shapes[:per_expert]))
    if rule.transform == "linear":
        return shapes[0][::-1]
    if rule.transform in ("split", "deinterleave"):
        return (*shapes[0][:-1], sum(s[-1] for s in shapes))
    if rule.transform in ("split_linear", "split_heads3", "split_grouped_qkv"):  # (sum, in) / bias
        return (sum(s[-1] for s in shapes), *shapes[0][:-1])
    if rule.transform == "squeeze":
        return (1, *shapes[0])
    return shapes[0]


def rule(hf: str, ours: str, transform: Transform = "copy",
         when: Callable[[Spec], bool] = always) -> Rule:
    return Rule(hf, (ours,), transform, when)


def stacked(hf: str, ours: str | tuple[str, ...], transform: Transform = "copy") -> Rule:
    """One tensor of every expert (E, ...) -> each expert's `ours` ({e}-templated)."""
    return Rule(hf, (ours,) if isinstance(ours, str) else ours, transform, stacked=True)


def unstacked(rule: Rule) -> Rule:
    """The rule one expert's slice of a stacked tensor takes."""
    return replace(rule, stacked=False)


def expand(rule: Rule, spec: Spec, base: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(checkpoint name, Weights paths) for every block and expert `rule` names: one name per
    expert for `{e}` in the name, one name for all a block's experts for a stacked rule (none
    without experts: a dense model of a table that lists stacked experts too)."""
    if rule.stacked and not spec.n_experts:
        return
    stack = rule.ours[0].split(".")[0]
    layers = {"encoder": spec.encoder_layers, "decoder": spec.decoder_layers}.get(stack, 0)
    for i in range(layers) if "{i}" in rule.hf else [0]:
        for e in range(spec.n_experts) if "{e}" in rule.hf else [0]:
            experts = range(spec.n_experts) if rule.stacked else [e]
            yield (rule.hf.format(base=base, i=i, e=e),
                   tuple(p.format(i=i, e=k) for k in experts for p in rule.ours))


def tensors_per_block(table: Table, spec: Spec) -> int:
    """The fewest tensors a checkpoint of `table` stores per block: one per expert when its
    experts are tensors of their own (a bound for refusing specs of more blocks than stored)."""
    per_expert = any("{e}" in r.hf for r in table.rules if r.when(spec))
    return max(1, spec.n_experts) if per_expert else 1


def linear(hf: str, weight: str, bias: str, when: Callable[[Spec], bool] = always) -> list[Rule]:
    """nn.Linear `hf`.weight (out, in) and its bias."""
    return [rule(f"{hf}.weight", weight, "linear", when), rule(f"{hf}.bias", bias, "copy", when)]


def norm(hf: str, ours: str, weight: str = "weight") -> list[Rule]:
    """A LayerNorm (scale and bias) or an RMSNorm (scale only: its bias rule is skipped)."""
    return [rule(f"{hf}.{weight}", f"{ours}.scale"), rule(f"{hf}.bias", f"{ours}.bias")]


# The classifier of a classification head (tfcli.engine.heads), one rule for every family:
# transformers names it `score` (decoder sequence classification, LLaMA-like token
# classification), `classifier` or `qa_outputs` (question answering), always top-level; the
# renames make the three one canonical name (a checkpoint holds one head). A spec without a
# classification head ignores it, as before heads were built.
CLASSIFIER_RULES = tuple(linear("classifier", "classifier", "classifier_bias"))
CLASSIFIER_RENAMES = tuple((f"{old}.{kind}", f"classifier.{kind}")
                           for old in ("score", "qa_outputs") for kind in ("weight", "bias"))


def with_classifier(table: Table) -> Table:
    """`table` with the classifier rules and names added."""
    return replace(table, rules=table.rules + CLASSIFIER_RULES,
                   renames=table.renames + CLASSIFIER_RENAMES,
                   ignored=table.ignored + (r"^classifier\.",))


# --- naming: checkpoint tensor -> Weights path, for messages ------------------------------------


@cache
def _hf_pattern(template: str, base: str) -> re.Pattern[str]:
    """`template` as a regex: `{base}` literal, `{i}` / `{e}` named groups of digits."""
    parts = re.split(r"(\{base\}|\{i\}|\{e\})", template)
    fields = {"{base}": re.escape(base), "{i}": r"(?P<i>\d+)", "{e}": r"(?P<e>\d+)"}
    return re.compile("".join(fields.get(p, re.escape(p)) for p in parts))


def engine_paths(table: Table, spec: Spec, base: str, name: str) -> tuple[str, ...] | None:
    """The Weights paths that `table` maps checkpoint tensor `name` (canonical, with `base`)
    to, block and expert indices filled in, or None when no rule names it. For error messages
    only: one regex per rule."""
    rules = sorted(table.rules, key=lambda r: not r.when(spec))  # the spec's own variant first
    for rule in rules:
        match = _hf_pattern(rule.hf, base).fullmatch(name)
        if match:
            return tuple(p.format(**match.groupdict()) for p in rule.ours)
    return None

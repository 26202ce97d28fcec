"""FLOPs of each op the engine reports, from the shapes it reports and the weights it reads.

The counting convention of `tfcli trace` (text.convention_text says it in words): 2 FLOPs per
multiply-add of a matrix, the stated per-element constants for adds, norms, softmax and
activations, nothing for lookups, masks and RoPE. A rule sees one op record: its name, input
shapes, output shape and the weight arrays it read (tfcli.engine.shaped.Shaped: shape, role);
nothing here knows a spec's layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from tfcli.analysis.trace.text import ACTIVATION_FLOPS, ADD_FLOPS, NORM_FLOPS, SOFTMAX_FLOPS
from tfcli.engine.shaped import Shaped
from tfcli.spec.model import Spec

Shape = tuple[int, ...]


class Op(NamedTuple):
    """One op as the engine reported it."""

    op: str
    inputs: tuple[Shape, ...]
    output: Shape
    reads: tuple[Shaped, ...]  # every weight read (owned or not), in the order reported


def token_flops(arrays: Sequence[Shaped]) -> int:
    """One row through linear layers: 2 per multiply-add of each matrix (a tied head's table is
    its matrix), ADD_FLOPS per bias element."""
    return sum(ADD_FLOPS * a.size if a.role == "vector" else 2 * a.size for a in arrays)


def _rows(shape: Shape) -> int:
    return math.prod(shape[:-1])


def _activation(spec: Spec) -> int:
    """Per hidden element: the nonlinearity, plus the gate product when gated."""
    return ACTIVATION_FLOPS + (1 if spec.gated else 0)


def _ffn_token(spec: Spec, arrays: Sequence[Shaped]) -> int:
    """One token through one dense FFN (an expert, the shared experts): its arrays' FLOPs and
    the activation on each hidden element (its up projection's width)."""
    width = next(a.shape[1] for a in arrays if a.path and a.path.endswith(".w_up"))
    return token_flops(arrays) + _activation(spec) * width


def _linear(o: Op, spec: Spec) -> int:
    return _rows(o.inputs[0]) * token_flops(o.reads)


Rule = Callable[[Op, Spec], int]


def _elementwise(per_element: int) -> Rule:
    return lambda o, spec: per_element * math.prod(o.output)


_RULES: dict[str, Rule] = {
    # linear layers: rows of the input through the weights read
    **dict.fromkeys(("q_proj", "k_proj", "v_proj", "ffn_up", "ffn_gate", "ffn_down",
                     "embedding_project", "q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj",
                     "logits", "classifier", "pos_key_proj", "pos_query_proj"), _linear),
    # the heads merged: one row per token of the output
    "out_proj": lambda o, spec: _rows(o.output) * token_flops(o.reads),
    # x @ W (+ gpt-oss's bias on the logits): the correction bias chooses experts, it is not
    # counted (like routing top-k)
    "router": lambda o, spec: _rows(o.inputs[0]) * token_flops(
        [a for a in o.reads if not (a.path or "").endswith(".router_bias")]),
    "experts": lambda o, spec: (_rows(o.inputs[0]) * spec.experts_per_token
                                * _ffn_token(spec, o.reads)),
    "shared_gate": lambda o, spec: _rows(o.inputs[0]) * (token_flops(o.reads) + ACTIVATION_FLOPS
                                                         + o.inputs[0][-1]),
    "shared_experts": lambda o, spec: _rows(o.inputs[0]) * (_ffn_token(spec, o.reads)
                                                            + ADD_FLOPS * o.output[-1]),
    "transform": lambda o, spec: _linear(o, spec) + ACTIVATION_FLOPS * math.prod(o.output),
    "classifier_dense": lambda o, spec: _linear(o, spec) + ACTIVATION_FLOPS * math.prod(o.output),
    "pooler": lambda o, spec: (_rows(o.output) * token_flops(o.reads)
                               + ACTIVATION_FLOPS * math.prod(o.output)),
    # attention: one dot product per (query, key) pair
    "scores": lambda o, spec: 2 * math.prod(o.output) * o.inputs[0][-1],
    "weighted_sum": lambda o, spec: 2 * math.prod(o.inputs[0]) * o.output[-1],
    **dict.fromkeys(("c2p", "p2c"), lambda o, spec: (2 * math.prod(o.inputs[0]) * o.inputs[1][1]
                                                     + ADD_FLOPS * math.prod(o.output))),
    "softmax": _elementwise(SOFTMAX_FLOPS),
    "softcap": _elementwise(ACTIVATION_FLOPS),
    "activation": lambda o, spec: (ACTIVATION_FLOPS + len(o.inputs) - 1) * math.prod(o.output),
    "residual_add": lambda o, spec: ADD_FLOPS * (len(o.inputs) - 1) * math.prod(o.output),
    **dict.fromkeys(("norm", "q_norm", "k_norm", "embedding_norm", "transform_norm",
                     "classifier_norm", "q_a_norm", "kv_a_norm"), _elementwise(NORM_FLOPS)),
    "embed_scale": _elementwise(1),
    "residual_scale": _elementwise(1),
    "logits_scaling": _elementwise(1),
    **dict.fromkeys(("position_embedding", "token_type_embedding"), _elementwise(ADD_FLOPS)),
    "mean_pool": lambda o, spec: ADD_FLOPS * math.prod(o.inputs[0]) + math.prod(o.output),
    **dict.fromkeys(("token_embedding", "relative_embedding"), lambda o, spec: 0),
}


def op_flops(op: Op, spec: Spec) -> int:
    """The op's FLOPs under the trace's convention; KeyError names an op without a rule."""
    return _RULES[op.op](op, spec)

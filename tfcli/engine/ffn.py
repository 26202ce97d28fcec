"""Position-wise feed-forward networks: dense (plain or gated) and top-k mixture of experts."""

from __future__ import annotations

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.inputs import NO_PROBE, Probe
from tfcli.engine.ops import activation_fn, softmax_
from tfcli.engine.parallel import WORKERS, linear, linear_split, parallel_for
from tfcli.engine.shaped import is_shaped
from tfcli.engine.weights import FFNWeights, MoEWeights
from tfcli.spec.model import Spec

HIDDEN_SLICE_BYTES = 1 << 22  # ~4 MB of one worker's hidden activations per round of rows
MIN_SPLIT_ROWS = 16  # fewer rows (decode steps): one FFN on the calling thread


def gate_(spec: Spec, gate: Array, hidden: Array) -> Array:
    """A gated FFN's hidden units, in place in `hidden` (x W_up, which is returned):
    act(gate) * hidden; swiglu_clamped (gpt-oss): with g = min(gate, l),
    (clip(hidden, -l, l) + 1) * g * sigmoid(alpha g), l = swiglu_limit. `gate` is overwritten."""
    if spec.activation != "swiglu_clamped":
        hidden *= activation_fn(spec.activation)(gate)
        return hidden
    limit = spec.swiglu_limit
    np.minimum(hidden, limit, out=hidden)
    np.maximum(hidden, -limit, out=hidden)
    hidden += 1.0
    np.minimum(gate, limit, out=gate)
    hidden *= gate
    gate *= -spec.swiglu_alpha
    with np.errstate(over="ignore"):  # exp overflows to inf: sigmoid 0, as it should
        np.exp(gate, out=gate)
    gate += 1.0
    hidden /= gate  # g / (1 + exp(-alpha g)) = g sigmoid(alpha g)
    return hidden


def _dense_rows(spec: Spec, w: FFNWeights, x: Array) -> Array:
    """W_down act(x W_up + b_up) + b_down; gated: W_down (act(x W_gate) * (x W_up)).

    x (n, d) -> (n, d), as whole products: a fused gate/up is one product.
    """
    if spec.gated:
        gate, hidden = linear_split(x, w, ("w_gate", "w_up"), ("b_gate", "b_up"))  # 2 x (n, d_ff)
        gate_(spec, gate, hidden)
    else:
        hidden = linear(x, w.w_up, w.b_up)  # (n, d) -> (n, d_ff)
        hidden = activation_fn(spec.activation)(hidden)
    return linear(hidden, w.w_down, w.b_down)  # (n, d_ff) -> (n, d)


def _hidden_slice(spec: Spec, w: FFNWeights, x: Array, c0: int, c1: int) -> Array:
    """Hidden units c0..c1-1 of the FFN: x (n, d) -> (n, c)."""
    hidden = x @ w.w_up[:, c0:c1]  # (n, d) @ (d, c)
    if w.b_up is not None:
        hidden += w.b_up[c0:c1]
    if not spec.gated:
        return activation_fn(spec.activation)(hidden)
    gate = x @ w.w_gate[:, c0:c1]  # type: ignore[index]  # (n, d) @ (d, c)
    if w.b_gate is not None:
        gate += w.b_gate[c0:c1]
    return gate_(spec, gate, hidden)


def _dense_columns(spec: Spec, w: FFNWeights, x: Array, out: Array) -> None:
    """out (n, d) = the FFN of x (n, d), its d_ff hidden units split into one slice per core.

    Each core reads only its slice of W_up and W_down (Megatron-style tensor parallelism) and
    leaves a partial (n, d) product; the partials are summed. Splitting rows instead makes
    every core pack both whole matrices for half the rows: GPT-2, N=128, 12 FFNs alone: 82-95
    GFLOP/s by rows, 104-118 by hidden units (2 cores). In a whole forward pass the gain was
    within the machine's noise (308 vs 321 ms, best of 12 alternating runs at N=128).
    """
    d_ff = w.w_down.shape[0]  # spec.d_ff, or an expert's width
    width = -(-d_ff // WORKERS)  # ceil
    partials = np.empty((-(-d_ff // width), *out.shape), dtype=out.dtype)  # (W, n, d)

    def hidden_units(c0: int, c1: int) -> None:
        hidden = _hidden_slice(spec, w, x, c0, c1)  # (n, c)
        np.matmul(hidden, w.w_down[c0:c1], out=partials[c0 // width])  # (n, c) @ (c, d)

    parallel_for(d_ff, width, hidden_units)
    np.add.reduce(partials, axis=0, out=out)  # (W, n, d) -> (n, d)
    if w.b_down is not None:
        out += w.b_down


def dense_ffn(spec: Spec, w: FFNWeights, x: Array, probe: Probe = NO_PROBE) -> Array:
    """The dense FFN on x (..., d) -> (..., d).

    A few rows (a decode step) run as whole products on the calling thread. More run in
    rounds of rows, each split across cores by hidden units (see _dense_columns), rounds
    small enough for each core's hidden slice to stay in cache through the activation.
    """
    flat = x.reshape(-1, x.shape[-1])  # (..., d) -> (N, d)
    n_rows = flat.shape[0]
    if n_rows < MIN_SPLIT_ROWS or WORKERS == 1 or is_shaped(x):
        out = _dense_rows(spec, w, flat)  # (N, d)
    else:
        out = np.empty((n_rows, w.w_down.shape[1]), dtype=np.result_type(x, w.w_down))
        slice_width = -(-w.w_down.shape[0] // WORKERS)
        cap = max(MIN_SPLIT_ROWS, HIDDEN_SLICE_BYTES // (slice_width * x.itemsize))
        rows = -(-n_rows // -(-n_rows // cap))  # equal rounds of at most cap rows
        for r0 in range(0, n_rows, rows):
            _dense_columns(spec, w, flat[r0 : r0 + rows], out[r0 : r0 + rows])
    hidden = (*x.shape[:-1], w.w_down.shape[0])  # d_ff, or an expert's width
    probe("ffn_up", hidden, (x,), (w.w_up, w.b_up))
    if spec.gated:
        probe("ffn_gate", hidden, (x,), (w.w_gate, w.b_gate))
    probe("activation", hidden, (hidden, hidden) if spec.gated else (hidden,))
    probe("ffn_down", x.shape, (hidden,), (w.w_down, w.b_down))
    return out.reshape(*x.shape[:-1], out.shape[-1])  # (N, d) -> (..., d)


def route(router_logits: Array, k: int, renormalise: bool = True) -> tuple[Array, Array]:
    """Top-k routing as HF Mixtral / Qwen MoE: softmax over all experts, keep the k largest,
    renormalise them to sum to 1 (spec.norm_topk_prob; off: the probabilities as they are).

    router_logits (N, E) -> expert ids (N, k) and weights (N, k).
    """
    probs = softmax_(router_logits.copy())  # (N, E)
    top = np.argsort(-probs, axis=-1, kind="stable")[:, :k]  # (N, k), ties -> lower expert id
    weights = np.take_along_axis(probs, top, axis=-1)  # (N, k)
    if renormalise:
        weights /= weights.sum(axis=-1, keepdims=True)
    return top, weights


def _sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):  # exp overflows to inf: sigmoid 0, as it should
        return 1.0 / (1.0 + np.exp(-x))


def _group_mask(spec: Spec, choice: Array) -> Array:
    """choice (N, E) with the experts outside each token's topk_groups best groups set to
    -inf. A group scores its best expert (max) or the sum of its best two (top2_sum)."""
    n_tokens, groups = choice.shape[0], spec.expert_groups
    grouped = choice.reshape(n_tokens, groups, -1)  # (N, G, E/G)
    if spec.group_score == "max":
        group_scores = grouped.max(axis=-1)  # (N, G)
    else:
        group_scores = -np.sort(-grouped, axis=-1)[..., :2].sum(axis=-1)  # (N, G)
    best = np.argsort(-group_scores, axis=-1, kind="stable")[:, : spec.topk_groups]  # (N, g)
    keep = np.zeros((n_tokens, groups), dtype=bool)
    np.put_along_axis(keep, best, True, axis=-1)
    return np.where(keep[:, :, None], grouped, -np.inf).reshape(choice.shape)  # (N, E)


def route_scored(spec: Spec, router_logits: Array,
                 bias: Array | None = None) -> tuple[Array, Array]:
    """DeepSeek routing: softmax or sigmoid scores; experts chosen on the scores plus the
    correction `bias` (V3), within the topk_groups best groups when group-limited; their
    unbiased scores renormalised (norm_topk_prob) and times routed_scaling_factor, as
    transformers' DeepseekV2/V3 routers. router_logits (N, E) -> ids (N, k), weights (N, k)."""
    if spec.router_scoring == "softmax":
        scores = softmax_(router_logits.copy())  # (N, E)
    else:
        scores = _sigmoid(router_logits)  # (N, E)
    choice = scores if bias is None else scores + bias  # (N, E)
    if spec.group_limited:
        choice = _group_mask(spec, choice)
    top = np.argsort(-choice, axis=-1, kind="stable")[:, : spec.experts_per_token]  # (N, k)
    weights = np.take_along_axis(scores, top, axis=-1)  # (N, k)
    if spec.norm_topk_prob:
        # transformers adds 1e-20 for sigmoid scores, whose k need not sum to anything near 1
        weights /= weights.sum(axis=-1, keepdims=True) + (1e-20 if spec.router_scoring == "sigmoid" else 0.0)
    if spec.routed_scaling_factor != 1.0:
        weights *= spec.routed_scaling_factor
    return top, weights


def sparsemixer(router_logits: Array, jitter: float) -> tuple[Array, Array]:
    """Phi-3.5-MoE's routing at inference (transformers' sparsemixer, training off): the best
    expert, weighted by its softmax among the logits within 2 x jitter of it (relative to
    max(|logit|, best)); then the best of the others, weighted by its softmax among those of
    the others within 2 x jitter of it. router_logits (N, E) -> ids (N, 2), weights (N, 2)."""
    rows = np.arange(router_logits.shape[0])[:, None]  # (N, 1)
    ids, weights, scores = [], [], router_logits
    for _ in range(2):
        best = np.argmax(scores, axis=-1)[:, None]  # (N, 1), ties -> lower expert id
        top = scores[rows, best]  # (N, 1)
        with np.errstate(divide="ignore", invalid="ignore"):  # all-zero logits: NaN, kept
            gap = (top - router_logits) / np.maximum(np.abs(router_logits), top)  # (N, E)
        gates = softmax_(np.where(gap > 2 * jitter, -np.inf, scores))  # (N, E)
        ids.append(best)
        weights.append(gates[rows, best])
        scores = scores.copy()
        scores[rows, best] = -np.inf  # the second pick leaves the first out
    return np.concatenate(ids, axis=-1), np.concatenate(weights, axis=-1)


def _plain_routing(spec: Spec) -> bool:
    """Mixtral / Qwen routing: softmax, no groups, no bias, no scaling (route's fast path)."""
    return (spec.router_scoring == "softmax" and not spec.group_limited
            and not spec.router_bias and spec.routed_scaling_factor == 1.0)


def shared_experts(spec: Spec, w: MoEWeights, x: Array) -> Array:
    """The shared experts on every token, x (N, d) -> (N, d): one dense FFN of their summed
    width, scaled by sigmoid(x w_gate) with a gate (Qwen2-MoE shared_expert_gate)."""
    y = dense_ffn(spec, w.shared, x)  # type: ignore[arg-type]  # (N, d)
    if w.shared_gate is not None:
        y *= _sigmoid(x @ w.shared_gate)  # (N, d) @ (d, 1) -> (N, 1)
    return y


def moe_ffn(spec: Spec, w: MoEWeights, x: Array, probe: Probe = NO_PROBE) -> Array:
    """Sparse mixture of experts (Shazeer et al. 2017; Mixtral): each token runs only on its
    top-k experts, and each expert runs only on the tokens routed to it. x (B, T, d) -> same."""
    flat = x.reshape(-1, x.shape[-1])  # (B, T, d) -> (N, d)
    logits = flat @ w.router  # (N, d) -> (N, E)
    if w.router_b is not None:  # gpt-oss: a bias on the logits themselves
        logits += w.router_b
    routed = (*x.shape[:-1], logits.shape[-1])  # (B, T, E)
    probe("router", routed, (x,), (w.router, w.router_b, w.router_bias))
    out = _routed_experts(spec, w, flat, logits)  # (N, d)
    probe("experts", x.shape, (x, routed), tuple(map(_ffn_reads, w.experts)))
    if w.shared is not None:
        out += shared_experts(spec, w, flat)  # (N, d)
        if w.shared_gate is not None:
            probe("shared_gate", (*x.shape[:-1], 1), (x,), (w.shared_gate,))
        probe("shared_experts", x.shape, (x,), _ffn_reads(w.shared))  # type: ignore[arg-type]
    return out.reshape(x.shape)  # (N, d) -> (B, T, d)


def _ffn_reads(w: FFNWeights) -> tuple[Array | None, ...]:
    """An FFN's arrays in the blueprint's order: up, gate, down, then their biases."""
    return (w.w_up, w.w_gate, w.w_down, w.b_up, w.b_gate, w.b_down)


def _routed_experts(spec: Spec, w: MoEWeights, flat: Array, logits: Array) -> Array:
    """Each token (N, d) through its top-k experts, weighted: (N, d). On shapes, which token
    goes where is data: the experts are one op whose output is the input's shape."""
    if is_shaped(flat):
        return np.empty_like(flat)
    if spec.router_scoring == "sparsemixer":
        top, weights = sparsemixer(logits, spec.router_jitter)  # (N, 2) x2
    elif _plain_routing(spec):
        top, weights = route(logits, spec.experts_per_token, spec.norm_topk_prob)  # (N, k) x2
    else:
        top, weights = route_scored(spec, logits, w.router_bias)  # (N, k) x2
    out = np.zeros_like(flat)  # (N, d)
    for expert_id, expert in enumerate(w.experts):
        token_ids, slot = np.nonzero(top == expert_id)  # a token picks an expert at most once
        if not token_ids.size:
            continue
        weight = weights[token_ids, slot][:, None]  # (n_e, 1)
        if spec.router_scales_input:  # Llama 4: expert(w x)
            out[token_ids] += dense_ffn(spec, expert, flat[token_ids] * weight)  # (n_e, d)
        else:
            y = dense_ffn(spec, expert, flat[token_ids])  # (n_e, d)
            y *= weight
            out[token_ids] += y
    return out


def ffn(spec: Spec, w: FFNWeights | MoEWeights, x: Array, probe: Probe = NO_PROBE) -> Array:
    """The block's FFN sublayer body (no norm, no residual): (B, T, d) -> (B, T, d)."""
    if isinstance(w, MoEWeights):
        return moe_ffn(spec, w, x, probe)
    return dense_ffn(spec, w, x, probe)

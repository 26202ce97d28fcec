"""Position-wise feed-forward networks: dense (plain or gated) and top-k mixture of experts.

Re-exported as tfcli.engine.model.ffn (the CONTRACT name).
"""

from __future__ import annotations

import numpy as np

from tfcli.engine.ops import GATE_ACTIVATIONS, Observer, activation_fn, softmax_
from tfcli.engine.parallel import WORKERS, linear, linear_split, parallel_for
from tfcli.engine.weights import FFNWeights, MoEWeights
from tfcli.spec import Spec

Array = np.ndarray
FFN_BLOCK_BYTES = 1 << 22  # ~4 MB of hidden activations per block of rows
MIN_FFN_ROWS = 64  # wide FFNs still get blocks big enough for an efficient matmul


def _linear(x: Array, w: Array, b: Array | None) -> Array:
    return linear(x, w, b)  # (..., in) -> (..., out); serial inside a parallel row block


def _dense_rows(spec: Spec, w: FFNWeights, x: Array) -> Array:
    """W_down act(x W_up + b_up) + b_down; gated: W_down (act(x W_gate) * (x W_up)).

    x (n, d) -> (n, d).
    """
    if spec.activation in GATE_ACTIVATIONS:
        gate, hidden = linear_split(x, w, ("w_gate", "w_up"), ("b_gate", "b_up"))  # 2 x (n, d_ff)
        hidden *= activation_fn(spec.activation)(gate)
    else:
        hidden = _linear(x, w.w_up, w.b_up)  # (n, d) -> (n, d_ff)
        hidden = activation_fn(spec.activation)(hidden)
    return _linear(hidden, w.w_down, w.b_down)  # (n, d_ff) -> (n, d)


def dense_ffn(spec: Spec, w: FFNWeights, x: Array, observe: Observer | None = None,
              path: str = "") -> Array:
    """The dense FFN on x (..., d) -> (..., d), in blocks of rows run in parallel.

    Rows are independent, so each block is a whole FFN on its own, and its (rows, d_ff)
    hidden array stays in cache while the activation makes its elementwise passes over it.
    """
    flat = x.reshape(-1, x.shape[-1])  # (..., d) -> (N, d)
    cap = max(MIN_FFN_ROWS, FFN_BLOCK_BYTES // (spec.d_ff * x.itemsize))
    # Whole rounds of equal blocks, one per core each, as big as the cache budget allows:
    # bigger blocks run the matmuls nearer peak (GPT-2, N=512: 128-row blocks 82 GFLOP/s,
    # 256-row blocks 101 GFLOP/s).
    n_blocks = WORKERS * -(-flat.shape[0] // (WORKERS * cap))  # ceil
    rows = max(MIN_FFN_ROWS, -(-flat.shape[0] // n_blocks))
    if flat.shape[0] <= rows:
        out = _dense_rows(spec, w, flat)  # (N, d); few rows: the matmuls split columns instead
    else:
        out = np.empty((flat.shape[0], w.w_down.shape[1]), dtype=np.result_type(x, w.w_down))

        def row_block(r0: int, r1: int) -> None:
            out[r0:r1] = _dense_rows(spec, w, flat[r0:r1])  # (n, d)

        parallel_for(flat.shape[0], rows, row_block)
    if observe is not None:
        hidden = (*x.shape[:-1], spec.d_ff)
        observe(path, "ffn_up", hidden)
        if spec.gated:
            observe(path, "ffn_gate", hidden)
        observe(path, "activation", hidden)
        observe(path, "ffn_down", x.shape)
    return out.reshape(*x.shape[:-1], out.shape[-1])  # (N, d) -> (..., d)


def route(router_logits: Array, k: int) -> tuple[Array, Array]:
    """Top-k routing as HF Mixtral: softmax over all experts, keep the k largest, renormalise.

    router_logits (N, E) -> expert ids (N, k) and weights (N, k) summing to 1 per token.
    """
    probs = softmax_(router_logits.copy())  # (N, E)
    top = np.argsort(-probs, axis=-1, kind="stable")[:, :k]  # (N, k), ties -> lower expert id
    weights = np.take_along_axis(probs, top, axis=-1)  # (N, k)
    weights /= weights.sum(axis=-1, keepdims=True)
    return top, weights


def moe_ffn(spec: Spec, w: MoEWeights, x: Array, observe: Observer | None = None,
            path: str = "") -> Array:
    """Sparse mixture of experts (Shazeer et al. 2017; Mixtral): each token runs only on its
    top-k experts, and each expert runs only on the tokens routed to it. x (B, T, d) -> same."""
    flat = x.reshape(-1, x.shape[-1])  # (B, T, d) -> (N, d)
    logits = flat @ w.router  # (N, d) -> (N, E)
    if observe is not None:
        observe(path, "router", (*x.shape[:-1], logits.shape[-1]))
    top, weights = route(logits, spec.experts_per_token)  # (N, k) x2
    out = np.zeros_like(flat)  # (N, d)
    for expert_id, expert in enumerate(w.experts):
        token_ids, slot = np.nonzero(top == expert_id)  # a token picks an expert at most once
        if token_ids.size:
            y = dense_ffn(spec, expert, flat[token_ids])  # (n_e, d)
            y *= weights[token_ids, slot][:, None]
            out[token_ids] += y
    out = out.reshape(x.shape)  # (N, d) -> (B, T, d)
    if observe is not None:
        observe(path, "experts", out.shape)
    return out


def ffn(spec: Spec, w: FFNWeights | MoEWeights, x: Array, observe: Observer | None = None,
        path: str = "") -> Array:
    """The block's FFN sublayer body (no norm, no residual): (B, T, d) -> (B, T, d)."""
    if isinstance(w, MoEWeights):
        return moe_ffn(spec, w, x, observe, path)
    return dense_ffn(spec, w, x, observe, path)

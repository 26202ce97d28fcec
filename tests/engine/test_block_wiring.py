"""Residual wiring (parallel_residual, norm_placement) and the output-head bias against float64
references of their formulas. The sublayers themselves (attention, FFN) are the engine's own,
tested elsewhere; what is checked here is how a block wires norms, sublayers and residuals:

    parallel one_norm:   x + attn(N(x)) + ffn(N(x))           (GPT-J, Phi-2, Falcon-7B)
    parallel two_norms:  x + attn(N1(x)) + ffn(N2(x))         (GPT-NeoX, Falcon new arch.)
    sublayer_post:       x + P(F(x)) per sublayer             (OLMo 2)
    sandwich:            x + P(F(N(x))) per sublayer          (Gemma 2 / 3)
    lm_head_bias:        h @ W + b                            (Phi-2, GPT-J)
"""

from __future__ import annotations

import numpy as np
import pytest

from tfcli.analysis.trace.build import build_trace
from tfcli.analysis.trace.check import execute_check
from tfcli.engine.attention import attention
from tfcli.engine.ffn import ffn
from tfcli.engine.generate import GenerationRequest, generate
from tfcli.engine.init import init_weights
from tfcli.engine.inputs import StackInput
from tfcli.engine.model import block_forward, forward, output_logits
from tfcli.engine.weights import NormWeights, count_parameters
from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.counts import components, total_parameters
from tfcli.spec.model import Spec

BASE = dict(name="wiring", family="decoder", vocab_size=40, max_seq_len=32, d_model=16,
            n_heads=4, n_kv_heads=2, d_ff=24, n_layers=2, positions="rope",
            activation="gelu_tanh", norm_eps=1e-5, init_std=0.3)  # sublayers that matter
T = 7


def _spec(**changes: object) -> Spec:
    return Spec(**(BASE | changes))


def _rms_norm(x: np.ndarray, w: NormWeights, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w.scale


def _layer_norm(x: np.ndarray, w: NormWeights, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w.scale + w.bias


def _randomised(spec: Spec, seed: int = 1):
    """float64 weights with every norm scale and bias drawn (ones and zeros would hide a
    norm applied twice, or the wrong one)."""
    weights = init_weights(spec, seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed + 100)
    for block in weights.decoder.blocks:
        for norm in (block.attn_norm, block.ffn_norm, block.attn_post_norm, block.ffn_post_norm):
            if norm is not None:
                norm.scale[:] = rng.normal(1.0, 0.3, norm.scale.shape)
                if norm.bias is not None:
                    norm.bias[:] = rng.normal(0.0, 0.3, norm.bias.shape)
    return weights


def _sublayers(spec: Spec, block, inputs: StackInput):
    def attn(h: np.ndarray) -> np.ndarray:
        return attention(spec, block.attn, h, inputs)

    def mlp(h: np.ndarray) -> np.ndarray:
        return ffn(spec, block.ffn, h)

    return attn, mlp


@pytest.mark.parametrize("kind", ["one_norm", "two_norms"])
def test_parallel_residual_matches_its_formula(kind: str) -> None:
    spec = _spec(parallel_residual=kind)
    block = _randomised(spec).decoder.blocks[0]
    assert (block.ffn_norm is None) == (kind == "one_norm")
    x = np.random.default_rng(0).normal(size=(2, T, spec.d_model))
    inputs = StackInput.over(T, causal=True)
    attn, mlp = _sublayers(spec, block, inputs)
    n1 = _layer_norm(x, block.attn_norm, spec.norm_eps)
    n2 = n1 if kind == "one_norm" else _layer_norm(x, block.ffn_norm, spec.norm_eps)
    expected = x + attn(n1) + mlp(n2)
    got = block_forward(spec, block, x.copy(), inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # and it is not the sequential block: x1 = x + attn(N1 x); x1 + ffn(N2 x1)
    sequential = block_forward(spec.replace(parallel_residual="off"), block, x.copy(), inputs) \
        if kind == "two_norms" else None
    if sequential is not None:
        assert np.abs(sequential - got).max() > 1e-3


@pytest.mark.parametrize("norm", ["rmsnorm", "layernorm"])
@pytest.mark.parametrize("placement", ["sublayer_post", "sandwich"])
def test_sublayer_output_norms_match_their_formula(placement: str, norm: str) -> None:
    spec = _spec(norm_placement=placement, norm=norm)
    block = _randomised(spec).decoder.blocks[0]
    N = _rms_norm if norm == "rmsnorm" else _layer_norm
    eps = spec.norm_eps
    x = np.random.default_rng(0).normal(size=(2, T, spec.d_model))
    inputs = StackInput.over(T, causal=True)
    attn, mlp = _sublayers(spec, block, inputs)
    if placement == "sublayer_post":  # no norm on the sublayers' inputs
        assert block.attn_norm is None and block.ffn_norm is None
        x1 = x + N(attn(x), block.attn_post_norm, eps)
        expected = x1 + N(mlp(x1), block.ffn_post_norm, eps)
    else:
        x1 = x + N(attn(N(x, block.attn_norm, eps)), block.attn_post_norm, eps)
        expected = x1 + N(mlp(N(x1, block.ffn_norm, eps)), block.ffn_post_norm, eps)
    got = block_forward(spec, block, x.copy(), inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_lm_head_bias_is_added_to_the_logits() -> None:
    spec = _spec(tie_embeddings=False, lm_head_bias=True)
    weights = init_weights(spec, seed=2, dtype=np.float64)
    assert weights.lm_head_bias.shape == (spec.vocab_size,)
    weights.lm_head_bias[:] = np.random.default_rng(3).normal(size=spec.vocab_size)
    hidden = np.random.default_rng(4).normal(size=(2, T, spec.d_model))
    expected = hidden @ weights.lm_head + weights.lm_head_bias
    np.testing.assert_allclose(output_logits(spec, weights, hidden), expected, rtol=1e-12,
                               atol=1e-12)


WIRINGS = {
    "one_norm": dict(parallel_residual="one_norm", tie_embeddings=False, lm_head_bias=True),
    "two_norms": dict(parallel_residual="two_norms", norm="rmsnorm", activation="swiglu"),
    "one_norm_mqa_moe": dict(parallel_residual="one_norm", n_kv_heads=1, n_experts=3,
                             experts_per_token=2, norm="rmsnorm", bias=False),
    "sublayer_post": dict(norm_placement="sublayer_post", norm="rmsnorm", qk_norm="full",
                          bias=False, activation="swiglu"),
    "sandwich": dict(norm_placement="sandwich", norm="rmsnorm", activation="geglu_tanh",
                     bias=False, sliding_window=3),
    "sandwich_moe_layernorm": dict(norm_placement="sandwich", n_experts=3, experts_per_token=1),
}
SEQUENTIAL = ("sublayer_post", "sandwich", "sandwich_moe_layernorm")


@pytest.mark.parametrize("name", WIRINGS)
def test_counts_allocations_and_trace_rows_agree(name: str) -> None:
    spec = _spec(**WIRINGS[name])
    assert count_parameters(init_weights(spec), spec) == total_parameters(spec)
    report = build_trace(spec, batch=2, seq_len=5)
    assert report.total_params == total_parameters(spec)
    adds = spec.n_layers * (2 if name in SEQUENTIAL else 1)  # parallel: one per block
    assert [r.op for r in report.rows].count("residual_add") == adds
    assert execute_check(spec, report).ok


def test_parameter_deltas_name_the_components() -> None:
    spec = _spec(parallel_residual="one_norm", tie_embeddings=False, lm_head_bias=True)
    paths = {c.path for c in components(spec)}
    assert "lm_head_bias" in paths
    assert not any(p.endswith(".ffn_norm.scale") for p in paths)  # the shared norm is attn_norm
    sequential = spec.replace(parallel_residual="off", lm_head_bias=False)
    # one_norm drops ffn_norm's scale and bias per block; the head bias adds vocab_size
    assert total_parameters(sequential) - total_parameters(spec) == \
        2 * spec.d_model * spec.n_layers - spec.vocab_size
    assert total_parameters(spec.replace(parallel_residual="two_norms")) == \
        total_parameters(sequential) + spec.vocab_size


def test_post_norm_components_and_rows() -> None:
    for placement, norms in (("sublayer_post", ("attn_post_norm", "ffn_post_norm")),
                             ("sandwich", ("attn_norm", "attn_post_norm", "ffn_norm",
                                           "ffn_post_norm"))):
        spec = _spec(norm_placement=placement, norm="rmsnorm")
        found = tuple(c.path.split(".")[3] for c in components(spec)
                      if c.path.startswith("decoder.blocks.*.") and c.path.endswith("norm.scale"))
        assert found == norms
        assert spec.final_norm
        rows = build_trace(spec, batch=1, seq_len=4).rows
        attn = [r.op for r in rows if r.path == "decoder.0.attn"]
        assert attn[attn.index("out_proj") + 1] == "norm"  # the output norm, inside the residual
        post = [r for r in rows if "decoder.blocks.0.attn_post_norm.scale" in r.weights]
        assert [r.op for r in post] == ["norm"]
    spec = _spec(norm_placement="sandwich", norm="rmsnorm")
    assert total_parameters(spec) - total_parameters(spec.replace(norm_placement="pre")) == \
        2 * spec.d_model * spec.n_layers
    assert total_parameters(spec.replace(norm_placement="sublayer_post")) == \
        total_parameters(spec.replace(norm_placement="pre"))


@pytest.mark.parametrize("name", WIRINGS)
def test_cached_generation_matches_uncached(name: str) -> None:
    spec = _spec(**WIRINGS[name])
    weights = init_weights(spec, seed=5)
    request = GenerationRequest(prompts=[[3, 9, 1, 30, 2], [7, 4]], max_new_tokens=6)
    cached = list(generate(spec, weights, request, use_cache=True))
    uncached = list(generate(spec, weights, request, use_cache=False))
    for a, b in zip(cached, uncached, strict=True):
        np.testing.assert_array_equal(a.tokens, b.tokens)
        np.testing.assert_allclose(a.logits, b.logits, rtol=1e-4, atol=1e-5)
    # the uncached logits of the prompt are a plain forward pass
    logits = forward(spec, weights, np.array([[3, 9, 1, 30, 2]])).logits
    assert np.isfinite(logits).all()


@pytest.mark.parametrize(("changes", "field"), [
    (dict(parallel_residual="one_norm", norm_placement="post"), "parallel_residual"),
    (dict(parallel_residual="two_norms", family="encoder-decoder", positions="learned"),
     "parallel_residual"),
    (dict(parallel_residual="one_norm", norm_placement="sandwich"), "parallel_residual"),
    (dict(norm_placement="sublayer_post", norm="none"), "norm_placement"),
    (dict(norm_placement="sandwich", family="encoder-decoder", positions="learned"),
     "norm_placement"),
    (dict(lm_head_bias=True), "lm_head_bias"),  # tied
    (dict(lm_head_bias=True, tie_embeddings=False, lm_head=False), "lm_head_bias"),
])
def test_refused_combinations_name_the_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises(SpecConsistencyError) as info:
        _spec(**changes)
    assert info.value.field == field

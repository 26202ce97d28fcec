"""forward(): every family and switch runs, keeps its dtype, ignores padding, and reports the
op shapes CONTRACT.md promises; the memory guard."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.engine_specs import BASE, VARIANTS, make_spec
from tests.tolerance import assert_close
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.init import init_weights
from tfcli.core.errors import BadInputError

RNG = np.random.default_rng(0)
TOKENS = RNG.integers(0, 61, size=(3, 9))
TARGET = RNG.integers(0, 61, size=(3, 5))


def _run(spec, weights, tokens, **kw):
    if spec.family == "encoder-decoder":
        kw.setdefault("decoder_tokens", TARGET[: tokens.shape[0]])
    observe = kw.pop("observe", None)
    return forward(spec, weights, ModelInput(tokens, **kw), observe)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_variant_runs_and_keeps_its_dtype(variant, dtype):
    spec = make_spec(variant)
    out = _run(spec, init_weights(spec, seed=0, dtype=dtype), TOKENS)
    t = TARGET.shape[1] if spec.family == "encoder-decoder" else TOKENS.shape[1]
    assert out.hidden.shape == (3, t, spec.d_model)
    for array in (out.hidden, out.logits, out.pooled, out.encoder_hidden):
        if array is not None:
            assert array.dtype == dtype and np.isfinite(array).all()
    assert (out.logits is not None) == spec.lm_head
    assert (out.pooled is not None) == spec.pooler
    assert (out.encoder_hidden is not None) == (spec.family == "encoder-decoder")


@pytest.mark.parametrize("variant", ["gpt", "llama_gqa", "mistral_window", "moe",
                                     "relative_decoder", "geglu_post", "bert", "t5", "vaswani"])
def test_right_padding_gives_each_sequence_its_own_result(variant):
    spec = make_spec(variant)
    w = init_weights(spec, seed=1, dtype=np.float64)
    lengths = [9, 4, 6]
    mask = np.arange(9)[None, :] < np.array(lengths)[:, None]  # (3, 9)
    padded = np.where(mask, TOKENS, 0)
    batch = _run(spec, w, padded, attention_mask=mask.astype(int))
    for i, n in enumerate(lengths):
        alone = _run(spec, w, TOKENS[i : i + 1, :n], decoder_tokens=TARGET[i : i + 1]
                     if spec.family == "encoder-decoder" else None)
        if spec.family == "encoder-decoder":  # the source is padded; the target is whole
            np.testing.assert_allclose(batch.logits[i], alone.logits[0], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(batch.encoder_hidden[i, :n], alone.encoder_hidden[0],
                                       rtol=1e-9, atol=1e-12)
        else:
            np.testing.assert_allclose(batch.hidden[i, :n], alone.hidden[0], rtol=1e-9, atol=1e-12)
        if spec.pooler:
            np.testing.assert_allclose(batch.pooled[i], alone.pooled[0], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("variant", ["gpt", "llama_gqa", "mqa_sinusoidal", "relative_decoder"])
def test_left_padding_with_positions_gives_each_sequence_its_own_result(variant):
    spec = make_spec(variant)
    w = init_weights(spec, seed=2, dtype=np.float64)
    lengths = np.array([9, 3, 7])
    pads = 9 - lengths
    mask = np.arange(9)[None, :] >= pads[:, None]  # (3, 9), real tokens at the right
    positions = np.maximum(np.arange(9)[None, :] - pads[:, None], 0)
    batch = forward(spec, w, ModelInput(np.where(mask, TOKENS, 0), attention_mask=mask,
                                       positions=positions))
    assert not np.isnan(batch.hidden).any()  # the first padded queries see no key at all
    for i, n in enumerate(lengths):
        alone = forward(spec, w, TOKENS[i : i + 1, 9 - n :])
        np.testing.assert_allclose(batch.logits[i, 9 - n :], alone.logits[0], rtol=1e-9, atol=1e-12)


def test_a_fully_masked_sequence_gives_finite_output():
    spec = make_spec("bert")
    out = forward(spec, init_weights(spec),
                  ModelInput(TOKENS[:2], attention_mask=np.array([[1] * 9, [0] * 9])))
    assert np.isfinite(out.hidden).all() and np.isfinite(out.pooled).all()


def test_heads_follow_their_formulas():
    t5 = make_spec("t5")
    w = init_weights(t5, seed=0, dtype=np.float64)
    out = forward(t5, w, ModelInput(TOKENS, decoder_tokens=TARGET))
    # Each head is one product over d_model terms, in the engine's own layout and call shape
    # (another BLAS order), plus the rescale, bias or tanh: d_model + 2 roundings.
    head_ops = BASE["d_model"] + 2
    assert_close(out.logits, out.hidden * t5.d_model**-0.5 @ w.token_embedding.T, ops=head_ops)
    bert = make_spec("bert")
    w = init_weights(bert, seed=0, dtype=np.float64)
    w.pooler_b[:] = 0.3
    out = forward(bert, w, TOKENS)
    assert_close(out.pooled, np.tanh(out.hidden[:, 0] @ w.pooler_w + 0.3), ops=head_ops)
    untied = make_spec("llama_gqa")
    w = init_weights(untied, seed=0, dtype=np.float64)
    out = forward(untied, w, TOKENS)
    assert_close(out.logits, out.hidden @ w.lm_head, ops=head_ops)


def test_token_types_change_the_result():
    spec = make_spec("bert")
    w = init_weights(spec, seed=0, dtype=np.float64)
    zeros = forward(spec, w, TOKENS).hidden
    same = ModelInput(TOKENS, token_types=np.zeros_like(TOKENS))
    other = ModelInput(TOKENS, token_types=np.ones_like(TOKENS))
    assert np.array_equal(zeros, forward(spec, w, same).hidden)
    assert not np.allclose(zeros, forward(spec, w, other).hidden)


def test_out_of_vocab_tokens_are_bad_input():
    spec = make_spec("gpt")
    with pytest.raises(BadInputError, match="outside the vocabulary"):
        forward(spec, init_weights(spec), np.array([[1, 61]]))
    with pytest.raises(BadInputError, match="max_seq_len"):
        forward(spec, init_weights(spec), np.zeros((1, 49), dtype=int))


@pytest.mark.parametrize("variant, kw, message", [
    ("bert", {"token_types": [[-1, 0, 0, 0, 0]]}, "token_types must lie in"),
    ("bert", {"token_types": [[2, 0, 0, 0, 0]]}, "token_types must lie in"),
    ("bert", {"token_types": [[0, 0]]}, "token_types must be integers of the tokens' shape"),
    ("gpt", {"token_types": [[0, 0, 0, 0, 0]]}, "no token-type embedding"),
    ("bert", {"attention_mask": np.ones((1, 7))}, "attention_mask has shape"),
    ("t5", {"decoder_tokens": [[0, 1]], "decoder_attention_mask": [[1]]},
     "decoder_attention_mask has shape"),
    ("gpt", {"positions": np.arange(5.0)}, "positions must be integers"),
    ("gpt", {"positions": np.arange(4)}, "positions must be integers"),
])
def test_malformed_side_inputs_are_bad_input(variant, kw, message):
    """Masks, token types and positions that do not fit the tokens are refused, never wrapped
    around (a negative type id indexing from the end) or silently cut."""
    spec = make_spec(variant)
    tokens = np.array([[1, 2, 3, 4, 5]])
    with pytest.raises(BadInputError, match=message):
        forward(spec, init_weights(spec), ModelInput(tokens, **kw))


def test_an_empty_batch_is_bad_input():
    spec = make_spec("gpt")
    with pytest.raises(BadInputError, match="non-empty"):
        forward(spec, init_weights(spec), np.zeros((0, 3), dtype=np.int64))


# --- observer contract -----------------------------------------------------------------------

def _expected_block(spec, stack, i, b, t, s_cross=None):
    """CONTRACT.md's table, written out for one block."""
    h, kv, dh, d, f = spec.n_heads, spec.kv_heads, spec.head_dim, spec.d_model, spec.d_ff
    pre = spec.norm_placement in ("pre", "sandwich")
    post = spec.norm_placement == "post"
    after_body = spec.norm_placement in ("sublayer_post", "sandwich")  # x + N(F(.))
    parallel = spec.parallel_residual != "off"  # one residual_add, after the FFN
    rows = []

    def attn(path, s):
        unnormed = i == 0 and not spec.first_attn_norm and path.endswith(".attn")  # ModernBERT
        rows.extend([(path, "norm", (b, t, d))] if pre and not unnormed else [])
        if spec.latent_attention and not path.endswith("cross_attn"):
            rows.extend(_expected_latent(spec, path, b, t))
        else:
            rows.extend([(path, "q_proj", (b, h, t, dh)), (path, "k_proj", (b, kv, s, dh)),
                         (path, "v_proj", (b, kv, s, dh))])
        rows.extend(_expected_disentangled(spec, path, b, t))
        dv = spec.value_dim
        rows.extend([(path, "scores", (b, h, t, s))]
                    + ([(path, "softcap", (b, h, t, s))] if spec.attn_logit_softcap else [])
                    + [(path, "softmax", (b, h, t, s)), (path, "weighted_sum", (b, h, t, dv)),
                     (path, "out_proj", (b, t, d))])
        rows.extend([(path, "norm", (b, t, d))] if after_body else [])
        rows.extend([] if parallel else [(path, "residual_add", (b, t, d))])
        rows.extend([(path, "norm", (b, t, d))] if post else [])

    attn(f"{stack}.{i}.attn", t)
    if s_cross is not None:
        attn(f"{stack}.{i}.cross_attn", s_cross)
    p = f"{stack}.{i}.ffn"
    rows.extend([(p, "norm", (b, t, d))] if pre and spec.parallel_residual != "one_norm" else [])
    if spec.moe_layer(i):
        rows.extend([(p, "router", (b, t, spec.n_experts)), (p, "experts", (b, t, d))])
        rows.extend([(p, "shared_gate", (b, t, 1))] if spec.shared_expert_gate else [])
        rows.extend([(p, "shared_experts", (b, t, d))] if spec.n_shared_experts else [])
    else:
        rows.append((p, "ffn_up", (b, t, f)))
        rows.extend([(p, "ffn_gate", (b, t, f))] if spec.gated else [])
        rows.extend([(p, "activation", (b, t, f)), (p, "ffn_down", (b, t, d))])
    rows.extend([(p, "norm", (b, t, d))] if after_body else [])
    rows.append((p, "residual_add", (b, t, d)))
    rows.extend([(p, "norm", (b, t, d))] if post else [])
    return rows


def _expected_disentangled(spec, path, b, t):
    """DeBERTa's position terms (engine/disentangled_attention.py): the table through the key
    and query projections, then the c2p and p2c scores, before the content scores."""
    terms, h, dh = spec.disentangled_attention or [], spec.n_heads, spec.head_dim
    heads = (h, spec.relative_rows, dh)
    rows = [(path, "pos_key_proj", heads)] if "c2p" in terms else []
    rows += [(path, "pos_query_proj", heads)] if "p2c" in terms else []
    return rows + [(path, term, (b, h, t, t)) for term in ("c2p", "p2c") if term in terms]


def _expected_latent(spec, path, b, t):
    """MLA's projections (engine/latent_attention.py): the query (full or through q_a), the
    joint down-projection, its norm, the up-projection of every cached latent."""
    h, r = spec.n_heads, spec.kv_lora_rank
    if spec.q_lora_rank is None:
        rows = [(path, "q_proj", (b, t, h, spec.head_dim))]
    else:
        rows = [(path, "q_a_proj", (b, t, spec.q_lora_rank)),
                (path, "q_a_norm", (b, t, spec.q_lora_rank)),
                (path, "q_b_proj", (b, t, h, spec.head_dim))]
    return rows + [(path, "kv_a_proj", (b, t, r + spec.qk_rope_head_dim)),
                   (path, "kv_a_norm", (b, t, r)),
                   (path, "kv_b_proj", (b, h, t, spec.qk_nope_head_dim + spec.value_dim))]


def _expected_embed(spec, b, t):
    e = spec.embedding_dim or spec.d_model  # factorised embeddings: e wide, then projected
    rows = [("embed", "token_embedding", (b, t, e))]
    if spec.scale_embeddings:
        rows.append(("embed", "embed_scale", (b, t, e)))
    if spec.positions in ("learned", "sinusoidal"):
        rows.append(("embed", "position_embedding", (b, t, e)))
    if spec.type_vocab_size:
        rows.append(("embed", "token_type_embedding", (b, t, e)))
    project = [("embed", "embedding_project", (b, t, spec.d_model))] \
        if spec.embedding_dim is not None else []
    if spec.embedding_project_first:  # DeBERTa: the norm then d_model wide
        rows, e, project = rows + project, spec.d_model, []
    if spec.embedding_norm:
        rows.append(("embed", "embedding_norm", (b, t, e)))
    return rows + project


def _expected_stack(spec, stack, n_layers, b, t, s_cross=None):
    table = (spec.relative_rows, spec.d_model)  # disentangled attention's, read once
    rows = [(f"{stack}.relative_embedding", "relative_embedding", table)] \
        if spec.disentangled_attention else []
    rows += [(f"{stack}.relative_embedding", "norm", table)] if spec.relative_embedding_norm else []
    rows += [r for i in range(n_layers) for r in _expected_block(spec, stack, i, b, t, s_cross)]
    if spec.final_norm:
        rows.append((f"{stack}.final_norm", "norm", (b, t, spec.d_model)))
    return rows


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_observed_ops_follow_the_contract(variant):
    spec = make_spec(variant)
    seen = []
    b, t, s = 3, TARGET.shape[1], TOKENS.shape[1]
    _run(spec, init_weights(spec), TOKENS, observe=lambda *row: seen.append(row))
    if spec.family == "encoder-decoder":
        expected = (_expected_embed(spec, b, s) + _expected_stack(spec, "encoder", spec.encoder_layers, b, s)
                    + _expected_embed(spec, b, t)
                    + _expected_stack(spec, "decoder", spec.decoder_layers, b, t, s_cross=s))
    else:
        stack = "encoder" if spec.family == "encoder" else "decoder"
        expected = _expected_embed(spec, b, s) + _expected_stack(spec, stack, spec.n_layers, b, s)
        t = s
    if spec.lm_head:
        expected.append(("head", "logits", (b, t, spec.vocab_size)))
    if spec.final_logit_softcap:
        expected.append(("head", "softcap", (b, t, spec.vocab_size)))
    if spec.pooler:
        expected.append(("head", "pooler", (b, spec.d_model)))
    assert seen == expected

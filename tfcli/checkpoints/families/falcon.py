"""Falcon (model_type falcon: Falcon-7B / 40B / 180B, Falcon 2): LayerNorm, GELU MLP, RoPE, a
fused query_key_value, and three block wirings, as transformers' FalconDecoderLayer runs them:
- parallel_attn (Falcon-7B): x + attn(LN(x)) + mlp(LN(x)), one input_layernorm;
- new_decoder_architecture (40B, 180B): ln_attn / ln_mlp, two norms, or one input_layernorm with
  num_ln_in_parallel_attn 1 (Falcon 2);
- parallel_attn false: sequential pre-norm (input_layernorm, post_attention_layernorm).
query_key_value's rows are grouped per key/value head, (n_kv, heads per group + 2, d_head): the
group's queries, then its key, then its value. With multi_query that is one group of every query
head; the old non-MQA layout, (H, 3, d_head), is H groups of one. ALiBi is refused by name.
"""

from __future__ import annotations

from collections.abc import Callable

from tfcli.checkpoints.families.common import activation, unsupported
from tfcli.checkpoints.families.rope import rope_theta, with_rope_scaling
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule
from tfcli.spec.model import Spec

# FalconConfig() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71,
    "num_ln_in_parallel_attn": None, "layer_norm_epsilon": 1e-5, "num_kv_heads": None,
    "alibi": False, "new_decoder_architecture": False, "multi_query": True,
    "parallel_attn": True, "bias": False, "max_position_embeddings": 2048,
    "ffn_hidden_size": None, "activation": "gelu", "tie_word_embeddings": True,
    "rope_theta": 10000.0,
}


def _kv_heads(c: ConfigFields, new: bool, n_heads: int) -> int:
    """Key/value heads as FalconAttention splits query_key_value."""
    configured = c.optional_integer("num_kv_heads") or n_heads
    if new:
        return configured
    if c.flag("multi_query"):
        return 1
    if configured != n_heads:  # transformers reshapes n_heads keys into num_kv_heads: an error
        raise unsupported(c, f"num_kv_heads {configured} without new_decoder_architecture or "
                             "multi_query is not supported (query_key_value holds every head)")
    return n_heads


def _wiring(c: ConfigFields, new: bool) -> str:
    """parallel_residual, from parallel_attn and num_ln_in_parallel_attn (2 by default with
    new_decoder_architecture); combinations transformers cannot run are refused."""
    parallel = c.flag("parallel_attn")
    norms = c.optional_integer("num_ln_in_parallel_attn") or (2 if new else None)
    if not parallel:
        if new:  # it builds input/post_attention_layernorm, then runs ln_attn
            raise unsupported(c, "new_decoder_architecture with parallel_attn = False is not "
                                 "supported (transformers cannot run it)")
        return "off"
    if norms not in (None, 1, 2) or (norms == 2 and not new):
        raise unsupported(c, f"num_ln_in_parallel_attn {shown(norms)} is not supported here "
                             "(1, or 2 with new_decoder_architecture)")
    return "two_norms" if norms == 2 else "one_norm"


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    if c.flag("alibi"):
        raise unsupported(c, "alibi = True is not supported (ALiBi attention biases; tfcli "
                             "models Falcon's RoPE)")
    new = c.flag("new_decoder_architecture")
    d_model = c.optional_integer("n_embed") or c.integer("hidden_size")  # n_embed: older name
    n_heads = c.integer("num_attention_heads")
    fields: Config = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": d_model,
        "n_heads": n_heads, "n_kv_heads": _kv_heads(c, new, n_heads),
        "n_layers": c.integer("num_hidden_layers"),
        "d_ff": c.optional_integer("ffn_hidden_size") or 4 * d_model,
        "activation": activation(c, c.text("activation"), "activation"),
        "norm": "layernorm", "norm_placement": "pre", "norm_eps": c.number("layer_norm_epsilon"),
        "parallel_residual": _wiring(c, new), "positions": "rope", "rope_theta": rope_theta(c),
        "bias": c.flag("bias"), "tie_embeddings": c.flag("tie_word_embeddings"),
        "lm_head": arch.lm_head,
    }
    with_rope_scaling(c, fields)
    return fields, []


def _two_norms(spec: Spec) -> bool:
    return spec.parallel_residual == "two_norms"


def _not_two_norms(spec: Spec) -> bool:
    return spec.parallel_residual != "two_norms"


def _only(rules: list[Rule], when: Callable[[Spec], bool]) -> list[Rule]:
    return [Rule(r.hf, r.ours, r.transform, when) for r in rules]


def _rules() -> list[Rule]:
    layer, b = "{base}h.{i}", "decoder.blocks.{i}"
    attn = f"{layer}.self_attention"
    qkv = tuple(f"{b}.attn.{x}" for x in ("wq", "wk", "wv"))
    bqkv = tuple(f"{b}.attn.{x}" for x in ("bq", "bk", "bv"))
    return [
        rule("{base}word_embeddings.weight", "token_embedding"),
        *_only(norm(f"{layer}.input_layernorm", f"{b}.attn_norm"), _not_two_norms),
        *_only(norm(f"{layer}.ln_attn", f"{b}.attn_norm"), _two_norms),
        *_only(norm(f"{layer}.ln_mlp", f"{b}.ffn_norm"), _two_norms),
        # sequential blocks only (a one_norm block has no ffn_norm: the rule finds no slot)
        *_only(norm(f"{layer}.post_attention_layernorm", f"{b}.ffn_norm"), _not_two_norms),
        Rule(f"{attn}.query_key_value.weight", qkv, "split_grouped_qkv"),
        Rule(f"{attn}.query_key_value.bias", bqkv, "split_grouped_qkv"),
        *linear(f"{attn}.dense", f"{b}.attn.wo", f"{b}.attn.bo"),
        *linear(f"{layer}.mlp.dense_h_to_4h", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.mlp.dense_4h_to_h", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm("{base}ln_f", "decoder.final_norm"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


TABLE = Table(
    bases=("transformer.", ""), anchor="word_embeddings.weight", rules=tuple(_rules()),
    # RoPE frequencies are recomputed; score / classifier / qa_outputs: task heads of a
    # body-only spec
    ignored=(r"rotary_emb\.inv_freq$", r"^(score|classifier|qa_outputs)\."),
    tied_copies=("lm_head.weight",),
)

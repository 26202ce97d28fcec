"""Gemma 1, 2 and 3 (text): config.json readers and checkpoint name tables.

Every Gemma scales its token embeddings by sqrt(d_model), normalises with (1 + weight) RMSNorms
and runs a gated GELU FFN. Gemma 2 adds sandwich norms around each sublayer, soft-capped
attention scores and logits, `query_pre_attn_scalar` and alternating local / global layers;
Gemma 3 per-head q/k norms, five local layers to one global (`sliding_window_pattern` or
`layer_types`), a RoPE base of its own for the local layers and rope scaling on the global
ones only. Formulas and defaults as transformers 5 (Gemma*Config, modeling_gemma*.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from tfcli.checkpoints.families.common import ACTIVATION_NAMES, unsupported
from tfcli.checkpoints.families.rope import rope_scaling, rope_theta
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, rule

# GemmaConfig() / Gemma2Config() / Gemma3TextConfig() defaults, for the keys read
GEMMA_DEFAULTS: Config = {
    "vocab_size": 256000, "hidden_size": 3072, "intermediate_size": 24576,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
    "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "rope_theta": 10000.0,
    "attention_bias": False,
}
GEMMA2_DEFAULTS: Config = GEMMA_DEFAULTS | {
    "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "hidden_activation": "gelu_pytorch_tanh",
    "query_pre_attn_scalar": 256, "sliding_window": 4096, "layer_types": None,
    "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
}
GEMMA3_DEFAULTS: Config = GEMMA2_DEFAULTS | {
    "vocab_size": 262208, "max_position_embeddings": 131072, "rope_theta": 1_000_000.0,
    "rope_local_base_freq": 10_000.0, "sliding_window_pattern": 6,
    "final_logit_softcapping": None, "attn_logit_softcapping": None,
}
# the gated FFN act(gate) * up for each HF activation (ACT2FN) a Gemma config may name
_GATED = {"gelu": "geglu", "gelu_tanh": "geglu_tanh", "silu": "swiglu"}
_LAYER_KINDS = {"sliding_attention": "local", "full_attention": "global"}


def _activation(c: ConfigFields, key: str) -> str:
    name = c.text(key)
    if c.values["model_type"] == "gemma" and name == "gelu":
        name = "gelu_pytorch_tanh"  # GemmaConfig turns the legacy "gelu" into the tanh GELU
    plain = ACTIVATION_NAMES.get(name)
    if plain not in _GATED:
        raise unsupported(c, f"{key} {shown(name)} is not supported (supported: "
                             f"{', '.join(n for n, p in sorted(ACTIVATION_NAMES.items()) if p in _GATED)})")
    return _GATED[plain]


def _body(c: ConfigFields, arch: Architecture, act_key: str) -> Config:
    """What every Gemma shares: a LLaMA-shaped decoder with scaled embeddings, (1 + weight)
    RMSNorms and a gated GELU FFN; no FFN biases (transformers hard-codes them off)."""
    if c.values.get("use_bidirectional_attention"):  # null (the configs' default) is off
        raise unsupported(c, "use_bidirectional_attention = True is not supported")
    return {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": c.integer("hidden_size"),
        "n_heads": c.integer("num_attention_heads"),
        "n_kv_heads": c.integer("num_key_value_heads"), "d_head": c.integer("head_dim"),
        "n_layers": c.integer("num_hidden_layers"), "d_ff": c.integer("intermediate_size"),
        "activation": _activation(c, act_key), "norm": "rmsnorm", "norm_unit_offset": True,
        "norm_eps": c.number("rms_norm_eps"), "positions": "rope", "bias": False,
        "attention_bias": c.flag("attention_bias"), "ffn_bias": False, "scale_embeddings": True,
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }


def _rope(c: ConfigFields) -> Config:
    """One RoPE for every layer (Gemma 1 and 2): base and scaling."""
    fields: Config = {"rope_theta": rope_theta(c)}
    scaling = rope_scaling(c)
    if scaling is not None:
        fields["rope_scaling"] = scaling
    return fields


def read_gemma(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """GemmaForCausalLM: `hidden_act` (the legacy "gelu" read as tanh GELU), head_dim 256."""
    return _body(c, arch, "hidden_act") | _rope(c), []


def shortest_period(kinds: list[str]) -> list[str]:
    """The shortest list whose repetition gives `kinds` (a config's full layer_types list):
    length n - border, the border from the KMP failure function (linear in the layers)."""
    border = [0] * len(kinds)
    for i in range(1, len(kinds)):
        k = border[i - 1]
        while k and kinds[i] != kinds[k]:
            k = border[k - 1]
        border[i] = k + (kinds[i] == kinds[k])
    return kinds[: len(kinds) - border[-1]] if kinds else kinds


def layer_pattern(c: ConfigFields, default: list[str],
                  kinds: Mapping[str, str] = _LAYER_KINDS) -> list[str]:
    """The layers' attention kinds: `layer_types` when given (each name's kind in `kinds`),
    else the family's default."""
    types = c.names("layer_types")
    for name in types:
        if name not in kinds:
            raise unsupported(c, f"layer_types {shown(name)} is not supported (supported: "
                                 f"{', '.join(kinds)})")
    if types and len(types) != c.integer("num_hidden_layers"):
        raise c.error("layer_types", f"has {len(types)} entries for "
                                     f"{c.integer('num_hidden_layers')} layers")
    return shortest_period([kinds[t] for t in types]) if types else default


def attention_pattern(c: ConfigFields, default: list[str]) -> Config:
    """layer_pattern and sliding_window; all-global layers need neither."""
    pattern = layer_pattern(c, default)
    if "local" not in pattern:
        return {}
    window = c.optional_integer("sliding_window")
    if window is None:
        raise unsupported(c, "sliding_window null with sliding_attention layers is not supported")
    return {"layer_pattern": pattern, "sliding_window": window}


def rotated_local_layers(c: ConfigFields, n_layers: int) -> Config:
    """Cohere2's and EXAONE 4's layers: `layer_types`, else every `sliding_window_pattern`-th
    layer full (as their config classes derive them), with no RoPE on the full layers."""
    period = None if c.names("layer_types") else c.integer("sliding_window_pattern")
    fields = attention_pattern(c, ["local"] * ((period or 1) - 1) + ["global"])
    kinds = fields.get("layer_pattern", ["global"])
    nope = [i for i in range(n_layers) if kinds[i % len(kinds)] == "global"]
    return fields | ({"nope_layers": nope} if nope else {})


def _softcaps(c: ConfigFields, arch: Architecture, attention: bool) -> Config:
    """The attention-score cap (when `attention`) and the logit cap (a class with an output
    head: the body-only and bare classes never reach the capped logits)."""
    keys = [("attn_logit_softcapping", "attn_logit_softcap")] if attention else []
    keys += [("final_logit_softcapping", "final_logit_softcap")] if arch.lm_head else []
    return {field: c.number(key) for key, field in keys if c.values.get(key) is not None}


def read_gemma2(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """Gemma2ForCausalLM: sandwich norms, scores scaled by query_pre_attn_scalar^-0.5 and
    soft-capped, capped logits, [local, global] layers (Gemma2Config's default layer_types)."""
    fields = _body(c, arch, "hidden_activation") | _rope(c) | {
        "norm_placement": "sandwich",
        "attention_scale": c.number("query_pre_attn_scalar") ** -0.5,
    }
    fields |= _softcaps(c, arch, attention=True)
    return fields | attention_pattern(c, ["local", "global"]), []


def _gemma3_rope(c: ConfigFields) -> tuple[ConfigFields, ConfigFields]:
    """(global, local) RoPE as Gemma3TextConfig builds them: transformers 5 nests
    `rope_parameters` per layer type; older configs give rope_theta / rope_scaling (global)
    and rope_local_base_freq (local) at the top level. The global one as a config whose
    rope keys rope_theta() / rope_scaling() read; the local one as its RoPE object."""
    params = c.section("rope_parameters")
    if not params.values:
        return c, ConfigFields({"rope_theta": c.number("rope_local_base_freq")}, c.file)
    if not (params.has("full_attention") or params.has("sliding_attention")):
        raise unsupported(c, "rope_parameters without 'full_attention' / 'sliding_attention' "
                             "entries is not supported")
    glob, local = params.section("full_attention"), params.section("sliding_attention")
    # as transformers: a top-level rope_scaling updates the global entry, thetas default
    glob_values = ({"rope_theta": GEMMA3_DEFAULTS["rope_theta"]} | glob.values
                   | c.section("rope_scaling").values)
    local_values = {"rope_theta": GEMMA3_DEFAULTS["rope_local_base_freq"]} | local.values
    return (ConfigFields(c.values | {"rope_parameters": glob_values, "rope_scaling": None},
                         c.file),
            ConfigFields(local_values, c.file, local.prefix))


def _gemma3_rope_fields(c: ConfigFields, local_layers: bool) -> Config:
    glob, local = _gemma3_rope(c)
    fields = _rope(glob)
    kind = local.optional_text("rope_type") or "default"
    if kind != "default":
        raise unsupported(c, f"RoPE scaling {shown(kind)} on the sliding_attention layers is "
                             "not supported (only on full_attention)")
    if local_layers:
        fields["rope_local_theta"] = local.number("rope_theta")
    return fields


def read_gemma3(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """Gemma3ForCausalLM (text): as Gemma 2 plus per-head (1 + weight) q/k norms, the local
    layers' own RoPE base, `sliding_window_pattern` (5 local : 1 global). transformers 5 does
    not pass attn_logit_softcapping to Gemma 3's attention: it changes nothing and is not read."""
    period = None if c.names("layer_types") else c.integer("sliding_window_pattern")
    pattern = attention_pattern(c, ["local"] * ((period or 1) - 1) + ["global"])
    fields = _body(c, arch, "hidden_activation") | {
        "norm_placement": "sandwich", "qk_norm": "per_head",
        "attention_scale": c.number("query_pre_attn_scalar") ** -0.5,
    }
    fields |= _gemma3_rope_fields(c, bool(pattern)) | pattern
    return fields | _softcaps(c, arch, attention=False), []


def _rules(sandwich: bool) -> list[Rule]:
    """Gemma 1's names are LLaMA's; Gemma 2 / 3 name four norms per block."""
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attn = [r for x in "qkvo" for r in linear(f"{layer}.self_attn.{x}_proj", f"{b}.attn.w{x}",
                                                 f"{b}.attn.b{x}")]
    mlp = [rule(f"{layer}.mlp.{p}_proj.weight", f"{b}.ffn.w_{p}", "linear")
           for p in ("gate", "up", "down")]
    if sandwich:
        norms = [rule(f"{layer}.post_attention_layernorm.weight", f"{b}.attn_post_norm.scale"),
                 rule(f"{layer}.pre_feedforward_layernorm.weight", f"{b}.ffn_norm.scale"),
                 rule(f"{layer}.post_feedforward_layernorm.weight", f"{b}.ffn_post_norm.scale")]
    else:
        norms = [rule(f"{layer}.post_attention_layernorm.weight", f"{b}.ffn_norm.scale")]
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        rule(f"{layer}.input_layernorm.weight", f"{b}.attn_norm.scale"),
        *attn,
        rule(f"{layer}.self_attn.q_norm.weight", f"{b}.attn.q_norm.scale"),  # Gemma 3
        rule(f"{layer}.self_attn.k_norm.weight", f"{b}.attn.k_norm.scale"),
        *norms,
        *mlp,
        rule("{base}norm.weight", "decoder.final_norm.scale"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


def _table(sandwich: bool) -> Table:
    return Table(
        bases=("model.", ""), anchor="embed_tokens.weight", rules=tuple(_rules(sandwich)),
        # RoPE frequencies are recomputed from the spec; score: a body-only spec's classifier
        ignored=(r"rotary_emb\.", r"^score\."),
        tied_copies=("lm_head.weight",),
    )


GEMMA_TABLE = _table(sandwich=False)
GEMMA2_TABLE = _table(sandwich=True)

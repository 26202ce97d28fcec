"""DeepSeek-V2 (`deepseek_v2`) and DeepSeek-V3 (`deepseek_v3`): multi-head latent attention
(MLA) and a mixture of experts with shared experts, as transformers' modeling code reads them.

Attention: queries from one q_proj, or through the q_lora_rank bottleneck (q_a_proj,
q_a_layernorm, q_b_proj); keys and values from one latent of kv_lora_rank plus a shared RoPE key
of qk_rope_head_dim (kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj). Every head expands its own
key and value, so num_key_value_heads must equal num_attention_heads. Block i is MoE when
i >= first_k_dense_replace (moe_layer_freq is ignored, as transformers ignores it), else a dense
MLP of intermediate_size. Experts are moe_intermediate_size wide; the shared experts are one MLP
of n_shared_experts x moe_intermediate_size, without a gate. The checkpoints store every expert
on its own (`mlp.experts.{e}.gate_proj`), as transformers 5 saves them.
"""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.families.common import require_false, unsupported
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, rule

# DeepseekV2Config() / DeepseekV3Config() defaults, for the keys read
DEEPSEEK_V2_DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
    "max_position_embeddings": 2048, "first_k_dense_replace": 0, "kv_lora_rank": 512,
    "q_lora_rank": 1536, "n_group": None, "n_routed_experts": 64, "n_shared_experts": 2,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "routed_scaling_factor": 1.0,
    "topk_group": None, "topk_method": "greedy", "v_head_dim": 128,
    "num_experts_per_tok": None, "moe_intermediate_size": 1407,
}
DEEPSEEK_V3_DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
    "routed_scaling_factor": 2.5, "kv_lora_rank": 512, "q_lora_rank": 1536,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "n_group": 8,
    "topk_group": 4, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "norm_topk_prob": True, "max_position_embeddings": 4096, "rope_interleave": True,
    "num_nextn_predict_layers": 1,
}
# tfcli lists dense_layers one by one; the spec holds at most this many
MAX_DENSE_LAYERS = 1024


def _attention(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """LLaMA's embedding, norms, RoPE and head, with MLA's widths for the heads. transformers
    reads neither head_dim (it sets it to qk_rope_head_dim) nor sliding_window here."""
    heads = c.integer("num_attention_heads")
    kv_heads = c.optional_integer("num_key_value_heads") or heads
    if kv_heads != heads:
        raise c.error("num_key_value_heads", f"must equal num_attention_heads ({heads:,}) under "
                      f"multi-head latent attention, got {kv_heads:,}: every head expands its "
                      "own key and value from the latent")
    c = ConfigFields(c.values | {"head_dim": None, "sliding_window": None}, c.file, c.prefix)
    fields, notes = llama.read_llama(c, arch)
    for derived in ("d_head", "n_kv_heads"):  # MLA derives them from its own widths
        fields.pop(derived)
    fields |= {
        "kv_lora_rank": c.integer("kv_lora_rank"),
        "q_lora_rank": c.optional_integer("q_lora_rank"),
        "qk_nope_head_dim": c.integer("qk_nope_head_dim"),
        "qk_rope_head_dim": c.integer("qk_rope_head_dim"),
        "v_head_dim": c.integer("v_head_dim"),
    }
    if fields["qk_rope_head_dim"] % 2:
        raise c.error("qk_rope_head_dim", f"must be even, got {fields['qk_rope_head_dim']:,}: "
                      "RoPE rotates dimensions in pairs")
    return fields, notes


def _flag_or_none(c: ConfigFields, key: str) -> bool:
    """A flag DeepseekV3Config types `bool | None`: null is false, as the modeling code's
    `if config.key:` reads it."""
    return c.values.get(key) is not None and c.flag(key)


def _n_experts(c: ConfigFields) -> tuple[str, int]:
    """The routed experts' key and count: n_routed_experts, or the alias the config class maps
    onto it (num_experts in V2, num_local_experts in V3) when the config gives that instead."""
    for key in ("num_experts", "num_local_experts"):
        if c.has(key):
            return key, c.integer(key)
    return "n_routed_experts", c.integer("n_routed_experts")


def groups(c: ConfigFields, n_experts: tuple[str, int], k: int, score: str) -> Config:
    """Group-limited routing: n_group equal groups, a token's experts from the topk_group best."""
    key, count = n_experts
    n_groups, chosen = c.integer("n_group"), c.integer("topk_group")
    if count % n_groups:
        raise c.error("n_group", f"{n_groups:,} does not divide {key} {count:,} into equal groups")
    if chosen > n_groups:
        raise c.error("topk_group", f"{chosen:,} exceeds n_group {n_groups:,}")
    per_group = count // n_groups
    if score == "top2_sum" and per_group < 2:
        raise c.error("n_group", f"leaves {per_group} expert per group; DeepSeek-V3 scores a "
                      "group by its best two")
    if k > chosen * per_group:
        raise c.error("num_experts_per_tok", f"{k:,} exceeds the {chosen * per_group:,} "
                      f"experts of the topk_group {chosen:,} groups a token may use")
    return {"expert_groups": n_groups, "topk_groups": chosen, "group_score": score}


def moe_fields(c: ConfigFields, n_layers: int) -> tuple[Config, tuple[str, int]]:
    """Experts, shared experts and the first dense blocks; a dense model (no fields) when
    first_k_dense_replace covers every block, as transformers then builds no MoE block."""
    dense = c.integer("first_k_dense_replace", minimum=0)
    n_experts = _n_experts(c)
    if dense >= n_layers:
        return {}, n_experts
    if dense > MAX_DENSE_LAYERS:
        raise c.error("first_k_dense_replace", f"{dense:,} dense blocks: tfcli lists at most "
                      f"{MAX_DENSE_LAYERS:,}")
    k = c.integer("num_experts_per_tok")
    if k > n_experts[1]:
        raise c.error("num_experts_per_tok", f"{k:,} exceeds {n_experts[0]} {n_experts[1]:,}")
    fields: Config = {
        "n_experts": n_experts[1], "experts_per_token": k,
        "expert_d_ff": c.integer("moe_intermediate_size"),
        "routed_scaling_factor": c.number("routed_scaling_factor"),
    }
    # the shared experts' MLP is n_shared_experts x moe_intermediate_size wide: 0 builds an
    # empty one (no parameters, adds nothing)
    shared = c.integer("n_shared_experts", minimum=0)
    if shared:
        fields["n_shared_experts"] = shared
    if dense:
        fields["dense_layers"] = list(range(dense))
    return fields, n_experts


def read_deepseek_v2(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """DeepSeek-V2: softmax router scores (DeepseekV2TopkRouter ignores scoring_func: noted
    when it says otherwise), topk_method greedy (no groups) or group_limited_greedy (groups
    scored by their best expert); the k weights are never renormalised, whatever
    norm_topk_prob says (the V2 router does not read it), then times routed_scaling_factor.
    RoPE is applied as complex rotations of dimension pairs (2i, 2i + 1): interleaved.
    mlp_bias puts biases on the dense and shared MLPs only (not the experts): refused."""
    require_false(c, "mlp_bias")
    fields, notes = _attention(c, arch)
    fields["rope_pairing"] = "interleaved"
    moe, n_experts = moe_fields(c, fields["n_layers"])
    if moe:
        moe["norm_topk_prob"] = False
        method = c.optional_text("topk_method")
        if method == "group_limited_greedy":
            moe |= groups(c, n_experts, moe["experts_per_token"], "max")
        elif method != "greedy":
            raise unsupported(c, f"topk_method {shown(method)} is not supported "
                                 "(supported: greedy, group_limited_greedy)")
        scoring = c.values.get("scoring_func")
        if scoring not in (None, "softmax"):
            notes.append(f"scoring_func {shown(scoring)} ignored: transformers' DeepSeek-V2 "
                         "router always scores by softmax")
    return fields | moe, notes


def read_deepseek_v3(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """DeepSeek-V3: sigmoid router scores plus the e_score_correction_bias buffer to choose
    the experts, within the topk_group best of n_group groups (each scored by its best two),
    the chosen unbiased scores renormalised with norm_topk_prob, times routed_scaling_factor
    (DeepseekV3TopkRouter reads neither scoring_func nor topk_method). rope_interleave true
    pairs dimensions (2i, 2i + 1), false rotate_half's (i, i + r/2). The multi-token-prediction
    layers (num_nextn_predict_layers, stored as the layers after the last) are not built, as
    transformers builds none: noted, and the loader ignores their tensors."""
    fields, notes = _attention(c, arch)
    fields["ffn_bias"] = False  # DeepseekV3MLP has no biases (it never reads mlp_bias)
    fields["rope_pairing"] = "interleaved" if _flag_or_none(c, "rope_interleave") else "half"
    moe, mtp_notes = v3_experts(c, fields["n_layers"])
    return fields | moe, notes + mtp_notes


def v3_experts(c: ConfigFields, n_layers: int) -> tuple[Config, list[str]]:
    """DeepSeek-V3's MoE fields (GLM-4.5's too): sigmoid scores, the correction bias to choose,
    groups scored by their best two, and the note that its multi-token-prediction layers are
    not built or counted."""
    moe, n_experts = moe_fields(c, n_layers)
    if moe:
        moe |= {"norm_topk_prob": _flag_or_none(c, "norm_topk_prob"),
                "router_scoring": "sigmoid", "router_bias": True}
        moe |= groups(c, n_experts, moe["experts_per_token"], "top2_sum")
    key = "num_mtp_layers" if c.has("num_mtp_layers") else "num_nextn_predict_layers"
    mtp = c.optional_integer(key, minimum=0)
    notes = [f"{mtp} multi-token-prediction layer(s) ({key}) not built or counted, as in "
             "transformers"] if mtp else []
    return moe, notes


def _attention_rules() -> list[Rule]:
    attn, b = "{base}layers.{i}.self_attn", "decoder.blocks.{i}.attn"
    return [
        rule(f"{attn}.q_proj.weight", f"{b}.wq", "linear"),  # without q_lora_rank
        *linear(f"{attn}.q_a_proj", f"{b}.wq_a", f"{b}.bq_a"),
        rule(f"{attn}.q_a_layernorm.weight", f"{b}.q_a_norm.scale"),
        rule(f"{attn}.q_b_proj.weight", f"{b}.wq_b", "linear"),
        *linear(f"{attn}.kv_a_proj_with_mqa", f"{b}.wkv_a", f"{b}.bkv_a"),
        rule(f"{attn}.kv_a_layernorm.weight", f"{b}.kv_a_norm.scale"),
        rule(f"{attn}.kv_b_proj.weight", f"{b}.wkv_b", "linear"),
        *linear(f"{attn}.o_proj", f"{b}.wo", f"{b}.bo"),
    ]


def _moe_rules() -> list[Rule]:
    mlp, b = "{base}layers.{i}.mlp", "decoder.blocks.{i}.ffn"
    projections = ("gate", "up", "down")
    return [
        rule(f"{mlp}.gate.weight", f"{b}.router", "linear"),
        rule(f"{mlp}.gate.e_score_correction_bias", f"{b}.router_bias"),  # (E,), V3
        *[rule(f"{mlp}.experts.{{e}}.{p}_proj.weight", f"{b}.experts.{{e}}.w_{p}", "linear")
          for p in projections],
        *[rule(f"{mlp}.shared_experts.{p}_proj.weight", f"{b}.shared.w_{p}", "linear")
          for p in projections],
    ]


# LLaMA's embedding, norms, dense MLP (of the first dense blocks) and head; MLA's attention
# rules instead of q/k/v/o, and the MoE block's (not Mixtral's block_sparse_moe)
_LLAMA_RULES = tuple(r for r in llama.TABLE.rules
                     if "block_sparse_moe" not in r.hf and ".self_attn." not in r.hf)
TABLE = Table(
    bases=llama.TABLE.bases, anchor=llama.TABLE.anchor,
    rules=_LLAMA_RULES + tuple(_attention_rules()) + tuple(_moe_rules()),
    ignored=llama.TABLE.ignored, tied_copies=llama.TABLE.tied_copies,
)
# DeepSeek-V3's released weights carry its multi-token-prediction layer as model.layers.61;
# DeepseekV3PreTrainedModel ignores it on load (_keys_to_ignore_on_load_unexpected), and so
# does tfcli
V3_TABLE = Table(
    bases=TABLE.bases, anchor=TABLE.anchor, rules=TABLE.rules,
    ignored=TABLE.ignored + (r"^model\.layers\.61\.",), tied_copies=TABLE.tied_copies,
)

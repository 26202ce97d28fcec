"""Granite (ibm-granite/granite-3.x): LLaMA's body and tensor names with four scalar multipliers:
the token embeddings times `embedding_multiplier`, the attention scores times
`attention_multiplier` (in place of 1/sqrt(d_head)), each sublayer's output times
`residual_multiplier` before its residual add, and the logits divided by `logits_scaling`.

GraniteMoE (`granitemoe`, granite-3.x-1b-a400m / -3b-a800m) is that with every FFN a top-k of
`num_local_experts` SwiGLU experts of `intermediate_size` (softmax over the k chosen logits: the
renormalised top-k). Its checkpoints stack each block's experts: `input_linear` (E, 2 d_ff, d),
gate | up, and `output_linear` (E, d, d_ff); the router is `router.layer`."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture
from tfcli.checkpoints.names import Table, rule, stacked

# GraniteConfig() defaults, for the keys read
DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "embedding_multiplier": 1.0, "attention_multiplier": 1.0, "residual_multiplier": 1.0,
    "logits_scaling": 1.0,
}
CLASSES: dict[str, Architecture] = {"GraniteForCausalLM": LM, "GraniteModel": BARE}
TABLE = llama.TABLE  # LLaMA's tensor names, layer for layer

# GraniteMoeConfig() defaults, for the keys read (no mlp_bias: it has no dense MLP)
MOE_DEFAULTS: Config = DEFAULTS | {"num_local_experts": 8, "num_experts_per_tok": 2}
MOE_CLASSES: dict[str, Architecture] = {"GraniteMoeForCausalLM": LM, "GraniteMoeModel": BARE}


def _multiplier(c: ConfigFields, key: str) -> float | None:
    """A multiplier's value (a number > 0), None when it is 1: nothing to do."""
    value = c.number(key)
    return None if value == 1 else value


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)  # Granite has none (read_llama reads it for others)
    fields["attention_scale"] = c.number("attention_multiplier")
    # the config keys are the spec fields' names; a bare model has no logits to scale
    for key in ("embedding_multiplier", "residual_multiplier", "logits_scaling"):
        value = _multiplier(c, key)
        if value is not None and (key != "logits_scaling" or arch.lm_head):
            fields[key] = value
    return fields, notes


def read_moe(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = read(c, arch)
    fields["ffn_bias"] = False  # GraniteMoeConfig has no mlp_bias: a key of that name means nothing
    fields |= {"n_experts": c.integer("num_local_experts", minimum=1),
               "experts_per_token": c.integer("num_experts_per_tok", minimum=1),
               "norm_topk_prob": True}  # softmax over the k chosen logits
    return fields, notes


def _moe_table() -> Table:
    moe, b = "{base}layers.{i}.block_sparse_moe", "decoder.blocks.{i}.ffn"
    dense = ("mlp.", "block_sparse_moe")  # LLaMA's dense MLP and Mixtral's experts
    return Table(
        bases=TABLE.bases, anchor=TABLE.anchor, ignored=TABLE.ignored,
        tied_copies=TABLE.tied_copies,
        rules=(*[r for r in TABLE.rules if not any(d in r.hf for d in dense)],
               rule(f"{moe}.router.layer.weight", f"{b}.router", "linear"),
               stacked(f"{moe}.input_linear.weight",
                       (f"{b}.experts.{{e}}.w_gate", f"{b}.experts.{{e}}.w_up"), "split_linear"),
               stacked(f"{moe}.output_linear.weight", f"{b}.experts.{{e}}.w_down", "linear")),
    )


MOE_TABLE = _moe_table()

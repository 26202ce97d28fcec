"""Checkpoint tensor names -> tfcli Weights paths: one explicit table per model family.

A Rule maps one checkpoint tensor to one or more Weights paths (dotted attribute / list-index
paths such as `decoder.blocks.3.attn.wq`, the same paths that `tfcli params` components and
`tfcli trace` rows carry). Templates use `{base}` for the base-model prefix (`transformer.` in a
GPT2LMHeadModel, `model.` in a LlamaForCausalLM, `bert.` in BertFor*), `{i}` for the block index
and `{e}` for the expert index (a params component writes both as `*`). A rule whose Weights
paths do not exist for the spec (a bias when `bias: false`, a dense FFN in an MoE block) is
skipped, so a table can list every variant of its family.

Transforms: `copy` keeps the array; `linear` transposes torch nn.Linear's (out, in) to tfcli's
(in, out); `split3` cuts GPT-2's fused c_attn (Conv1D, already (in, out)) into q, k, v along the
last axis.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Literal

from tfcli.spec import Spec

Transform = Literal["copy", "linear", "split3"]


def always(spec: Spec) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    hf: str  # checkpoint name template
    ours: tuple[str, ...]  # Weights path template(s); three for split3
    transform: Transform = "copy"
    when: Callable[[Spec], bool] = always  # extra condition (T5's gated vs plain FFN names)


@dataclass(frozen=True)
class Table:
    bases: tuple[str, ...]  # base-model prefixes, tried in order against `anchor`
    anchor: str  # a tensor (without base) that every checkpoint of the family has
    rules: tuple[Rule, ...]
    ignored: tuple[str, ...] = ()  # regexes (re.search) of tensors known to be unused
    tied_copies: tuple[str, ...] = ()  # duplicates of the embedding, ignored when tied
    renames: tuple[tuple[str, str], ...] = ()  # (old suffix, new suffix)


def rule(hf: str, ours: str, transform: Transform = "copy",
         when: Callable[[Spec], bool] = always) -> Rule:
    return Rule(hf, (ours,), transform, when)


def linear(hf: str, weight: str, bias: str, when: Callable[[Spec], bool] = always) -> list[Rule]:
    """nn.Linear `hf`.weight (out, in) and its bias."""
    return [rule(f"{hf}.weight", weight, "linear", when), rule(f"{hf}.bias", bias, "copy", when)]


def norm(hf: str, ours: str, weight: str = "weight") -> list[Rule]:
    """A LayerNorm (scale and bias) or an RMSNorm (scale only: its bias rule is skipped)."""
    return [rule(f"{hf}.{weight}", f"{ours}.scale"), rule(f"{hf}.bias", f"{ours}.bias")]


# --- GPT-2: Conv1D weights are stored (in, out) already ---------------------------------------


def _gpt2_rules() -> list[Rule]:
    h, b = "{base}h.{i}", "decoder.blocks.{i}"
    qkv = tuple(f"{b}.attn.{x}" for x in ("wq", "wk", "wv"))
    bqkv = tuple(f"{b}.attn.{x}" for x in ("bq", "bk", "bv"))
    return [
        rule("{base}wte.weight", "token_embedding"),
        rule("{base}wpe.weight", "position_embedding"),
        *norm(f"{h}.ln_1", f"{b}.attn_norm"),
        Rule(f"{h}.attn.c_attn.weight", qkv, "split3"),
        Rule(f"{h}.attn.c_attn.bias", bqkv, "split3"),
        rule(f"{h}.attn.c_proj.weight", f"{b}.attn.wo"),
        rule(f"{h}.attn.c_proj.bias", f"{b}.attn.bo"),
        *norm(f"{h}.ln_2", f"{b}.ffn_norm"),
        rule(f"{h}.mlp.c_fc.weight", f"{b}.ffn.w_up"),
        rule(f"{h}.mlp.c_fc.bias", f"{b}.ffn.b_up"),
        rule(f"{h}.mlp.c_proj.weight", f"{b}.ffn.w_down"),
        rule(f"{h}.mlp.c_proj.bias", f"{b}.ffn.b_down"),
        *norm("{base}ln_f", "decoder.final_norm"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


GPT2 = Table(
    bases=("transformer.", ""), anchor="wte.weight", rules=tuple(_gpt2_rules()),
    # causal-mask buffers of old checkpoints; the task heads of GPT2For* (a body-only spec)
    ignored=(r"h\.\d+\.attn\.(bias|masked_bias)$", r"^(score|classifier|qa_outputs)\."),
    tied_copies=("lm_head.weight",),
)


# --- BERT (BertModel: post-LN encoder, embedding LayerNorm, pooler) ---------------------------


def _bert_rules() -> list[Rule]:
    e, layer, b = "{base}embeddings", "{base}encoder.layer.{i}", "encoder.blocks.{i}"
    return [
        rule(f"{e}.word_embeddings.weight", "token_embedding"),
        rule(f"{e}.position_embeddings.weight", "position_embedding"),
        rule(f"{e}.token_type_embeddings.weight", "token_type_embedding"),
        *norm(f"{e}.LayerNorm", "embedding_norm"),
        *linear(f"{layer}.attention.self.query", f"{b}.attn.wq", f"{b}.attn.bq"),
        *linear(f"{layer}.attention.self.key", f"{b}.attn.wk", f"{b}.attn.bk"),
        *linear(f"{layer}.attention.self.value", f"{b}.attn.wv", f"{b}.attn.bv"),
        *linear(f"{layer}.attention.output.dense", f"{b}.attn.wo", f"{b}.attn.bo"),
        *norm(f"{layer}.attention.output.LayerNorm", f"{b}.attn_norm"),  # post-LN: after attn
        *linear(f"{layer}.intermediate.dense", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.output.dense", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm(f"{layer}.output.LayerNorm", f"{b}.ffn_norm"),
        *linear("{base}pooler.dense", "pooler_w", "pooler_b"),
    ]


BERT = Table(
    bases=("bert.", ""), anchor="embeddings.word_embeddings.weight", rules=tuple(_bert_rules()),
    # position_ids / token_type_ids are index buffers; cls.*, classifier.*, qa_outputs.* are
    # task heads on top of BertModel, which tfcli does not model.
    ignored=(r"embeddings\.(position_ids|token_type_ids)$", r"^(cls|classifier|qa_outputs)\."),
    renames=((".gamma", ".weight"), (".beta", ".bias")),  # TF-era LayerNorm names
)


# --- LLaMA, Mistral, Mixtral (one table: dense rules skip for MoE specs and vice versa) -------


def _llama_rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attn = [r for x in "qkvo" for r in linear(f"{layer}.self_attn.{x}_proj", f"{b}.attn.w{x}",
                                                 f"{b}.attn.b{x}")]
    dense = [r for p in ("gate", "up", "down")
             for r in linear(f"{layer}.mlp.{p}_proj", f"{b}.ffn.w_{p}", f"{b}.ffn.b_{p}")]
    moe = f"{layer}.block_sparse_moe"
    experts = [  # Mixtral's w1 = gate, w3 = up, w2 = down
        rule(f"{moe}.experts.{{e}}.{hf}.weight", f"{b}.ffn.experts.{{e}}.{ours}", "linear")
        for hf, ours in (("w1", "w_gate"), ("w3", "w_up"), ("w2", "w_down"))
    ]
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        rule(f"{layer}.input_layernorm.weight", f"{b}.attn_norm.scale"),
        *attn,
        rule(f"{layer}.self_attn.q_norm.weight", f"{b}.attn.q_norm.scale"),  # Qwen3
        rule(f"{layer}.self_attn.k_norm.weight", f"{b}.attn.k_norm.scale"),
        rule(f"{layer}.post_attention_layernorm.weight", f"{b}.ffn_norm.scale"),
        *dense,
        rule(f"{moe}.gate.weight", f"{b}.ffn.router", "linear"),
        *experts,
        rule("{base}norm.weight", "decoder.final_norm.scale"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


LLAMA = Table(
    # LlamaForQuestionAnswering keeps its body under "transformer."
    bases=("model.", "transformer.", ""), anchor="embed_tokens.weight", rules=tuple(_llama_rules()),
    # RoPE frequencies are recomputed from rope_theta; score / qa_outputs: task heads of a
    # body-only spec (*ForSequenceClassification, ...)
    ignored=(r"rotary_emb\.inv_freq$", r"^(score|qa_outputs)\."),
    tied_copies=("lm_head.weight",),
)


# --- T5: encoder blocks are [self-attn, FFN], decoder blocks [self-attn, cross-attn, FFN] ----


def _t5_ffn(layer: str, b: str) -> list[Rule]:
    ffn, plain = f"{layer}.DenseReluDense", (lambda s: not s.gated)
    return [
        rule(f"{ffn}.wi.weight", f"{b}.ffn.w_up", "linear", plain),
        rule(f"{ffn}.wi_0.weight", f"{b}.ffn.w_gate", "linear"),  # gated: wi_0 takes the act
        rule(f"{ffn}.wi_1.weight", f"{b}.ffn.w_up", "linear", lambda s: s.gated),
        rule(f"{ffn}.wo.weight", f"{b}.ffn.w_down", "linear"),
        rule(f"{layer}.layer_norm.weight", f"{b}.ffn_norm.scale"),
    ]


def _t5_attention(layer: str, module: str, ours: str, norm_path: str) -> list[Rule]:
    return [
        *(rule(f"{layer}.{module}.{x}.weight", f"{ours}.w{x}", "linear") for x in "qkvo"),
        rule(f"{layer}.layer_norm.weight", f"{norm_path}.scale"),
    ]


def _t5_stack(stack: str) -> list[Rule]:
    layer, b = f"{stack}.block.{{i}}.layer", f"{stack}.blocks.{{i}}"
    rules = [
        rule(f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
             f"{stack}.relative_bias"),
        *_t5_attention(f"{layer}.0", "SelfAttention", f"{b}.attn", f"{b}.attn_norm"),
    ]
    if stack == "decoder":
        rules += _t5_attention(f"{layer}.1", "EncDecAttention", f"{b}.cross_attn", f"{b}.cross_norm")
    rules += _t5_ffn(f"{layer}.{2 if stack == 'decoder' else 1}", b)
    return [*rules, rule(f"{stack}.final_layer_norm.weight", f"{stack}.final_norm.scale")]


T5 = Table(
    bases=("",), anchor="shared.weight",
    rules=(rule("shared.weight", "token_embedding"), *_t5_stack("encoder"), *_t5_stack("decoder"),
           rule("lm_head.weight", "lm_head", "linear")),
    # Each stack's embed_tokens is the shared table; old checkpoints carry an unused
    # cross-attention relative bias (transformers ignores it too).
    ignored=(r"^(encoder|decoder)\.embed_tokens\.weight$",
             r"^decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight$",
             r"^qa_outputs\."),  # T5ForQuestionAnswering's head (a body-only spec)
    tied_copies=("lm_head.weight",),
)

TABLES: dict[str, Table] = {"gpt2": GPT2, "bert": BERT, "llama": LLAMA, "mistral": LLAMA,
                            "mixtral": LLAMA, "t5": T5, "qwen2": LLAMA, "qwen3": LLAMA}


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

"""The families tfcli memory is measured against (tests/parity/test_memory_*.py): one row each,
a tiny transformers config named by its classes (transformers loads in memory_cases' `built`
fixture, not at collection) and what is measured on it: the attentions, sizes and dtypes of the
inference peak (live tensor storages, op by op: torch CPU has no allocator statistics) and of
the saved activations (saved_tensors_hooks, each storage once), the training forward, the
tolerance.
Figures quoted are measured/planned ratios; docs/memory.md has the sizes measured by hand."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import pytest

from tests.parity.memory_cases import (SIZES, VOCAB, Forward, Run, bare, hidden_loss, ids,
                                       labelled_loss, last_hidden, lm_loss, no_cache, pooled,
                                       seq2seq)

if TYPE_CHECKING:
    from torch import Tensor
    from transformers import PreTrainedModel

Size = tuple[int, int]
Case = tuple[str, str]  # (attention, recompute)
ATTENTIONS = ("eager", "sdpa")
TRAINING: tuple[Case, ...] = (("eager", "none"), ("sdpa", "none"), ("eager", "full"),
                              ("sdpa", "full"))
ONE = ((2, 64),)  # one size in CI: (2, 64)


@dataclass(frozen=True, eq=False)
class Lora:
    """Where a family's LoRA targets sit: the blocks' path, each target's linear in a block."""

    blocks: str
    modules: Mapping[str, str]


@dataclass(frozen=True, eq=False)
class Family:
    """One row: a tiny random model and what is measured on it (float32 unless said)."""

    name: str  # the test id
    model: str  # the transformers class, built on...
    config: str  # ...its config class with
    settings: Mapping[str, object]  # ...these settings
    run: Run = lm_loss  # the training forward whose saved tensors are measured
    forward: Forward = no_cache  # inference's keyword arguments beside input_ids
    # how it gets an attention: set_attn_implementation ("switch"), its config at build time
    # ("built": FalconForCausalLM's set_attn_implementation only warns), or none ("eager":
    # DebertaV2 is not written against the attention interface, Gemma 2 has no sdpa)
    attention: Literal["switch", "built", "eager"] = "switch"
    peak: tuple[str, ...] = ATTENTIONS  # inference peak's attentions, at each of peak_sizes
    peak_sizes: tuple[Size, ...] = SIZES
    half_peak: tuple[str, ...] = ATTENTIONS  # ... in bfloat16, at half_peak_size
    half_peak_size: Size = (1, 256)
    saved: tuple[Case, ...] = TRAINING  # saved activations, at each of saved_sizes
    saved_sizes: tuple[Size, ...] = SIZES
    half_saved: tuple[str, ...] = ATTENTIONS  # ... in bfloat16, at (2, 64)
    dropout: Mapping[str, object] = field(default_factory=dict)  # settings with dropout on
    dropout_saved: tuple[Case, ...] = ()  # ... and its saved activations, at (2, 64)
    token_stride: int = 1  # token ids times this (spread over a larger vocabulary)
    optimizer: bool = False  # optimizer state, gradients, weights, step scratch to the byte
    kv_cache: Size | None = None  # the plan's KV cache to the byte at (batch, seq_len)
    lora: Lora | None = None
    lora_cases: tuple[tuple[str, bool], ...] = ()  # (attention, every target, else q and v)
    peak_share: float = 0.15  # the inference peak within 15% of the measured
    saved_share: float = 0.10  # the saved bytes within 10%

    def build(self, tf: ModuleType, **changes: object) -> PreTrainedModel:
        """The model of this row's settings with `changes`, on the current torch seed."""
        config = getattr(tf, self.config)(**(dict(self.settings) | changes))
        return getattr(tf, self.model)(config)

    def run_as(self, model: PreTrainedModel, attention: str) -> PreTrainedModel:
        """`model` running `attention`, checked: transformers says it runs it."""
        if self.attention == "switch":
            model.set_attn_implementation(attention)
        assert model.config._attn_implementation == attention, (self.name, attention)
        return model

    def tokens(self, batch: int, seq_len: int) -> Tensor:
        return ids(batch, seq_len) * self.token_stride


LLAMA_LORA = Lora("model.layers", {
    "q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
    "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
    "down": "mlp.down_proj"})
BERT_LORA = Lora("encoder.layer", {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "o": "attention.output.dense", "up": "intermediate.dense", "down": "output.dense"})
LORA_CASES = tuple(itertools.product(ATTENTIONS, (False, True)))

# GPT-2, Llama (GQA), Gemma (MQA, gated tanh GELU), Qwen2, Mixtral (MoE), Qwen2-MoE (shared
# expert), Qwen3-MoE (q/k norms), Phi-3 and GPT-NeoX (fused projections), BERT and BART
# (encoder-decoder): both attentions, both sizes, recomputed or not, bfloat16 (Llama-style
# eager attention upcasts its scores for the softmax; saved: RMSNorm's float32 copies, the
# float32 statistics and (RoPE families, eager) the float32 softmax beside its cast), and the
# optimizer's figures to the byte. Live dropouts save their noise (and eager attention the
# dropped probabilities). LoRA: only the adapters train, a frozen linear saves nothing, RMS
# norm no normed values.
SMALL = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
             intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512)
NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
BERT = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=128,
            vocab_size=VOCAB, max_position_embeddings=512)
DECODERS = (
    Family("gpt2", "GPT2LMHeadModel", "GPT2Config", dict(
        n_embd=64, n_head=4, n_layer=2, vocab_size=VOCAB, n_positions=512, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0), optimizer=True,
        dropout=dict(resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1),  # GPT-2's own 0.1
        dropout_saved=(("eager", "none"),)),
    Family("llama", "LlamaForCausalLM", "LlamaConfig", SMALL, optimizer=True, lora=LLAMA_LORA,
           lora_cases=LORA_CASES),
    Family("gemma", "GemmaForCausalLM", "GemmaConfig",  # MQA, gated gelu_pytorch_tanh
           SMALL | dict(num_key_value_heads=1, head_dim=16), optimizer=True),
    Family("qwen2", "Qwen2ForCausalLM", "Qwen2Config", SMALL, optimizer=True),  # Q/K/V biases
    Family("granite", "GraniteForCausalLM", "GraniteConfig",  # the four multipliers
           SMALL | dict(embedding_multiplier=12.0, residual_multiplier=0.22,
                        attention_multiplier=0.0625, logits_scaling=16.0), optimizer=True),
    Family("smollm3", "SmolLM3ForCausalLM", "SmolLM3Config",  # block 1 of 2 without RoPE
           SMALL | dict(no_rope_layer_interval=2, pad_token_id=0, bos_token_id=0,
                        eos_token_id=0), optimizer=True),
    Family("mixtral", "MixtralForCausalLM", "MixtralConfig",  # top-2 of 4 experts
           SMALL | dict(num_local_experts=4, num_experts_per_tok=2), optimizer=True),
    Family("glm", "GlmForCausalLM", "GlmConfig",  # partial interleaved RoPE, fused gate_up
           SMALL | dict(head_dim=16, pad_token_id=0, eos_token_id=0), optimizer=True),
    Family("glm4", "Glm4ForCausalLM", "Glm4Config",  # + post-sublayer norms
           SMALL | dict(head_dim=16, pad_token_id=0, eos_token_id=0), optimizer=True),
    Family("glm4_moe", "Glm4MoeForCausalLM", "Glm4MoeConfig",  # DeepSeek-V3 routing, GQA
           SMALL | dict(head_dim=16, moe_intermediate_size=64, n_routed_experts=4,
                        num_experts_per_tok=2, first_k_dense_replace=1, pad_token_id=0),
           optimizer=True),
    Family("phimoe", "PhimoeForCausalLM", "PhimoeConfig",  # sparsemixer, LayerNorm biases
           SMALL | dict(num_local_experts=4, num_experts_per_tok=2, attention_bias=True,
                        lm_head_bias=True), optimizer=True),
    Family("starcoder2", "Starcoder2ForCausalLM", "Starcoder2Config",  # LayerNorm, biased GELU
           SMALL | dict(bos_token_id=0, eos_token_id=0, residual_dropout=0.0,
                        embedding_dropout=0.0, attention_dropout=0.0), optimizer=True),
    Family("olmoe", "OlmoeForCausalLM", "OlmoeConfig",  # full q/k norms, unrenormalised
           SMALL | dict(num_experts=4, num_experts_per_tok=2, pad_token_id=0, bos_token_id=0,
                        eos_token_id=0), optimizer=True),
    Family("granitemoe", "GraniteMoeForCausalLM", "GraniteMoeConfig",  # stacked experts,
           SMALL | dict(num_local_experts=4, num_experts_per_tok=2,  # the multipliers
                        embedding_multiplier=12.0, residual_multiplier=0.22,
                        attention_multiplier=0.0625, logits_scaling=16.0), optimizer=True),
    Family("qwen2_moe", "Qwen2MoeForCausalLM", "Qwen2MoeConfig", SMALL | dict(  # + a gated
        moe_intermediate_size=64, shared_expert_intermediate_size=96,  # shared expert
        num_experts=4, num_experts_per_tok=2), optimizer=True),
    Family("qwen3_moe", "Qwen3MoeForCausalLM", "Qwen3MoeConfig", SMALL | dict(  # per-head
        moe_intermediate_size=64, head_dim=16, num_experts=4,  # q/k norms
        num_experts_per_tok=2), optimizer=True),
    Family("phi3", "Phi3ForCausalLM", "Phi3Config", SMALL | dict(  # fused qkv_proj, gate_up_proj
        pad_token_id=0, bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0),
        optimizer=True),
    Family("gpt_neox", "GPTNeoXForCausalLM", "GPTNeoXConfig", dict(  # fused query_key_value,
        hidden_size=64, num_attention_heads=4, num_hidden_layers=2,  # partial RoPE, parallel
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512,  # residual
        hidden_dropout=0.0, attention_dropout=0.0, bos_token_id=0, eos_token_id=0),
        optimizer=True),
    Family("bert", "BertModel", "BertConfig", BERT | NO_DROPOUT, run=pooled, forward=bare,
           optimizer=True, dropout=dict(hidden_dropout_prob=0.1,  # BERT's own 0.1
                                        attention_probs_dropout_prob=0.1),
           dropout_saved=(("eager", "none"),), lora=BERT_LORA, lora_cases=LORA_CASES),
    Family("bart", "BartForConditionalGeneration", "BartConfig", dict(  # encoder-decoder
        d_model=64, encoder_attention_heads=4, decoder_attention_heads=4, encoder_layers=2,
        decoder_layers=2, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=VOCAB,
        max_position_embeddings=512, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
        forced_eos_token_id=None), forward=seq2seq, optimizer=True),
)

# T5's relative position bias (tfcli/analysis/memory/layouts/t5.py): held by each stack (and
# sdpa's masked copies of it); T5EncoderModel's int64 bucket temporaries are its peak at
# (1, 256); UMT5 (a bias table per block) is refused for inference (test_memory_refusals.py).
# Saved: measured to the byte (the loss's 4-byte scalar aside); bfloat16: T5LayerNorm keeps its
# 16-bit input beside the float32 copy, sdpa's math path saves float32, the loss's log-softmax
# stays 16-bit. T5's own dropout (0.1) drops after the FFN's activation and each stack's final
# norm too, and on CPU sdpa's cross-attention then runs the math path.
T5 = dict(d_model=64, d_kv=16, num_heads=4, num_layers=2, num_decoder_layers=2, d_ff=128,
          vocab_size=VOCAB, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
          dropout_rate=0.0)
T5_FAMILIES = (
    Family("t5", "T5ForConditionalGeneration", "T5Config",  # T5 v1.0
           T5 | dict(feed_forward_proj="relu"), forward=seq2seq, half_peak=()),
    Family("t5_gated", "T5ForConditionalGeneration", "T5Config",  # v1.1 / mT5: gelu_new
           T5 | dict(feed_forward_proj="gated-gelu"), forward=seq2seq, half_peak=(),
           dropout=dict(dropout_rate=0.1), dropout_saved=(("eager", "none"), ("sdpa", "none"))),
    Family("t5_encoder", "T5EncoderModel", "T5Config", T5 | dict(feed_forward_proj="gated-gelu"),
           run=hidden_loss, forward=bare, half_peak=()),
    Family("umt5", "UMT5ForConditionalGeneration", "UMT5Config",  # a bias table per block
           T5 | dict(feed_forward_proj="gated-gelu"), peak=(), half_peak=()),
)

# Multi-head latent attention (with and without the q_lora_rank bottleneck) and the DeepSeek
# MoE layer (a dense first block, then routed experts under a sigmoid (V3) or softmax (V2)
# group-limited router, then an ungated shared expert). bfloat16: eager's float32 softmax, the
# sdpa math path's float32 copies (q, k, v saved), the router's float32 weights on the experts'
# outputs and its float32 input and weight copies, RMSNorm's float32 copies of the latents.
# "v3-flash": q/k heads as wide as the value heads (qk_nope 8 + rope 8 = v 16), the one MLA
# shape torch's CPU sdpa runs in its flash kernel; the others (dq 24, dv 16, as every released
# DeepSeek) take sdpa's math path, which materialises the scores. transformers (5.x) caches
# MLA's normed latent (B, 1, S, r) and rotated RoPE key (B, 1, S, dr) per layer, as tfcli's
# engine does.
DEEPSEEK = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4,
                num_hidden_layers=2, intermediate_size=128, vocab_size=VOCAB,
                max_position_embeddings=512, kv_lora_rank=32, qk_rope_head_dim=8,
                qk_nope_head_dim=16, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                n_shared_experts=1, moe_intermediate_size=32,
                first_k_dense_replace=1)  # block 0 dense, block 1 MoE
DEEPSEEK_FAMILIES = (
    Family("deepseek-v3", "DeepseekV3ForCausalLM", "DeepseekV3Config",
           DEEPSEEK | dict(q_lora_rank=32, n_group=2, topk_group=1), kv_cache=(2, 64)),
    Family("deepseek-v2-lite", "DeepseekV2ForCausalLM", "DeepseekV2Config",  # no q bottleneck
           DEEPSEEK | dict(q_lora_rank=None, topk_method="group_limited_greedy", n_group=2,
                           topk_group=1), kv_cache=(2, 64)),
    Family("deepseek-v3-flash", "DeepseekV3ForCausalLM", "DeepseekV3Config",
           DEEPSEEK | dict(qk_nope_head_dim=8, q_lora_rank=32, n_group=2, topk_group=1),
           kv_cache=(2, 64)),
)

# Falcon's own attention module (tfcli/analysis/memory/layouts/falcon.py, `--fused
# falcon_qkv`) in its three query_key_value layouts: Falcon-7B's multi-query with parallel
# attention, Falcon-40B / 180B's new_decoder_architecture (grouped, 2 key/value heads, two
# norms), the old per-head layout with sequential blocks (measured 1.000 inference; 0.996-1.002
# saved; multi-query sdpa in bfloat16 runs the float32 math path). Falcon-40B's layout caches
# K/V repeated to every query head (4 here, for 2 key/value heads); Falcon-7B's its one head,
# the per-head layout all.
FALCON = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2, vocab_size=VOCAB,
              max_position_embeddings=512, alibi=False, hidden_dropout=0.0,
              attention_dropout=0.0, bos_token_id=0, eos_token_id=0)
FALCON_FAMILIES = tuple(
    Family(name, "FalconForCausalLM", "FalconConfig", FALCON | layout, attention="built",
           kv_cache=(2, 16))
    for name, layout in (("falcon-7b", dict(multi_query=True, parallel_attn=True)),
                         ("falcon-40b", dict(new_decoder_architecture=True, num_kv_heads=2)),
                         ("falcon-per-head", dict(multi_query=False, parallel_attn=False))))

# Partial rotary through separate q/k projections (tfcli/analysis/memory/rope_layouts.py; GPT-J
# interleaved, Phi and StableLM half-split), StableLM's sequential layer, OLMo 2's
# whole-projection q/k norms, float32 RoPE and post-sublayer norms; one size in CI (measured
# 0.994-1.005 here and at (1, 256), by hand also with OLMo 2 without GQA, a parallel StableLM
# and Phi with GQA). Without rope_layouts: StableLM's sdpa peak 0.83, OLMo 2's 1.10 (sdpa) and
# 0.86 (bfloat16), OLMo 2's bfloat16 saved bytes 0.88. bfloat16 saved: OLMo 2's RMS norms save
# float32 normed values; GPT-J's eager q and k float32 copies.
ROPE = dict(num_hidden_layers=2, vocab_size=VOCAB, max_position_embeddings=512, bos_token_id=0,
            eos_token_id=0)
ONE_SIZE = dict(peak_sizes=ONE, half_peak_size=(2, 64), saved_sizes=ONE)
ROPE_FAMILIES = (
    Family("gptj", "GPTJForCausalLM", "GPTJConfig", dict(  # interleaved RoPE on 8 of 16 dims
        n_embd=64, n_head=4, n_layer=2, vocab_size=VOCAB, n_positions=512, rotary_dim=8,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0),
        **ONE_SIZE),
    Family("phi", "PhiForCausalLM", "PhiConfig", ROPE | dict(  # half of each head, parallel
        hidden_size=64, num_attention_heads=4, intermediate_size=128, resid_pdrop=0.0,
        embd_pdrop=0.0, attention_dropout=0.0), **ONE_SIZE),
    Family("stablelm", "StableLmForCausalLM", "StableLmConfig", ROPE | dict(  # a quarter, GQA,
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2,  # sequential
        intermediate_size=128, use_qkv_bias=True, hidden_dropout=0.0, attention_dropout=0.0),
        **ONE_SIZE),
    Family("olmo2", "Olmo2ForCausalLM", "Olmo2Config", ROPE | dict(  # q/k norms, norms after
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2,  # sublayers
        intermediate_size=128, pad_token_id=0), **ONE_SIZE),
)

# The sliding-window and soft-capped decoders (tfcli/analysis/memory/window.py): Mistral with a
# window shorter than the sequence, Gemma 2 (local / global layers, sandwich norms, attention
# and final logit soft-capping 50, 30; no sdpa in transformers: planned, and measured, as
# eager), Gemma 3 text (five local layers to one global, two RoPE bases, per-head q/k norms),
# Qwen3 dense (per-head q/k norms, no window); measured 0.996-1.000. The window (32) is shorter
# than the sequence at both sizes: the inference peak at (1, 256), where the masked sdpa
# layers' attention (the float mask copy, K and V repeated) is the peak and eager's two masks
# are held beside the scores; the saved bytes at (2, 64). bfloat16: Gemma's (1 + weight)
# RMSNorms keep their normed values in float32 (0.81-0.89 without); Mistral's sdpa mask copies
# are bfloat16. LoRA on q, v (Mistral's modules are Llama's): the masked sdpa layers' float
# mask copies and repeated K / V (0.87 without them).
GEMMA = dict(head_dim=16, sliding_window=32, query_pre_attn_scalar=16)
WINDOW = dict(peak_sizes=((1, 256),), half_peak=(), saved_sizes=ONE,
              saved=(("eager", "none"), ("sdpa", "none"), ("sdpa", "full")))
WINDOW_FAMILIES = (
    Family("mistral", "MistralForCausalLM", "MistralConfig", SMALL | dict(sliding_window=32),
           **WINDOW, half_saved=("sdpa",), lora=LLAMA_LORA, lora_cases=(("sdpa", False),)),
    Family("gemma2", "Gemma2ForCausalLM", "Gemma2Config", SMALL | GEMMA, attention="eager",
           **(WINDOW | dict(saved=(("eager", "none"), ("eager", "full")))), peak=("eager",),
           half_saved=("eager",)),
    Family("gemma3", "Gemma3ForCausalLM", "Gemma3TextConfig",  # 5 local : 1 global
           SMALL | dict(num_hidden_layers=6) | GEMMA, **WINDOW),
    Family("qwen3", "Qwen3ForCausalLM", "Qwen3Config", SMALL | dict(head_dim=16), **WINDOW,
           half_saved=()),
)

# BERT's descendants, bare (no task head): RobertaModel and XLMRobertaModel (positions past the
# padding index, pooler), DistilBertModel (its own attention module, no token types, no pooler;
# hidden_dim 4 x dim as distilbert-base: at 2 x dim its sdpa peak is 1.143 of the live set, the
# plan's BERT-style output LayerNorm phase holding the activation output DistilBERT's FFN has
# freed), AlbertModel (factorised embeddings, one shared block, pooler; no gradient
# checkpointing, its refusal in test_memory_refusals.py) and ElectraModel (embedding
# projection, no pooler). One size, (2, 64); bfloat16 with sdpa. The training forward: the
# pooler's output, or a loss on the last hidden state (whatever reads the output saves it: the
# plan's head input).
ENCODER = dict(forward=bare, half_peak=("sdpa",), half_saved=("sdpa",),
               saved=(("eager", "none"), ("sdpa", "none"), ("sdpa", "full")), **ONE_SIZE)
ENCODER_SETTINGS = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2,
                        intermediate_size=128, vocab_size=VOCAB) | NO_DROPOUT
ENCODER_FAMILIES = (
    Family("roberta", "RobertaModel", "RobertaConfig",
           ENCODER_SETTINGS | dict(max_position_embeddings=514), run=pooled, **ENCODER),
    Family("xlm_roberta", "XLMRobertaModel", "XLMRobertaConfig",
           ENCODER_SETTINGS | dict(max_position_embeddings=514), run=pooled, **ENCODER),
    Family("distilbert", "DistilBertModel", "DistilBertConfig", dict(
        dim=64, n_heads=4, n_layers=2, hidden_dim=256, vocab_size=VOCAB, dropout=0.0,
        attention_dropout=0.0), run=hidden_loss, **ENCODER),
    Family("albert", "AlbertModel", "AlbertConfig", ENCODER_SETTINGS | dict(embedding_size=32),
           run=pooled, **(ENCODER | dict(saved=(("eager", "none"), ("sdpa", "none"))))),
    Family("electra", "ElectraModel", "ElectraConfig", ENCODER_SETTINGS | dict(embedding_size=32),
           run=hidden_loss, **ENCODER),
)

# DeBERTa-v2/v3 (tfcli/analysis/memory/layouts/deberta.py), bare DebertaV2Model, eager only
# (asked for sdpa it stays eager: test_memory_eager_only.py). bfloat16: 16-bit scores and hidden
# states, the mask, positions and indices keep their dtypes; saved, the float32 norm statistics
# tfcli counts (CUDA's) are 2-byte on CPU. Its configs train with 0.1 everywhere: each dropout
# saves its noise (the probabilities' and the relative table's also their dropped copies,
# every layer). The training forward: the last hidden state itself.
DEBERTA = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2,
               intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512,
               relative_attention=True, position_biased_input=False,
               type_vocab_size=0) | NO_DROPOUT
EAGER = (("eager", "none"), ("eager", "full"))
DEBERTA_FAMILIES = tuple(
    Family(name, "DebertaV2Model", "DebertaV2Config", DEBERTA | changes, run=last_hidden,
           forward=bare, attention="eager", peak=("eager",), half_peak=("eager",), saved=EAGER,
           half_saved=("eager",), dropout=dict(hidden_dropout_prob=0.1,
                                               attention_probs_dropout_prob=0.1),
           dropout_saved=EAGER)
    for name, changes in (
        # deberta-v3's layout at a tiny size: both terms through the layer's own query / key
        # projections, log buckets (256 in v3, 32 here), a LayerNorm'd table
        ("deberta-v3", dict(pos_att_type="p2c|c2p", share_att_key=True,
                            norm_rel_ebd="layer_norm", position_buckets=32)),
        # one term with its own pos_key_proj, plain clipped offsets over 2 x 128 rows, no norm
        ("deberta-c2p", dict(pos_att_type="c2p", share_att_key=False,
                             max_relative_positions=128)),
        # the other term alone (pos_query_proj), absolute positions and token types as in v2
        ("deberta-p2c", dict(pos_att_type="p2c", share_att_key=False, norm_rel_ebd="layer_norm",
                             position_buckets=64, position_biased_input=True,
                             type_vocab_size=2))))

# ModernBERT (tfcli/analysis/memory/layouts/modernbert.py), bare and masked-LM: layers global,
# local, local (global_attn_every_n_layers 3), window 128; (2, 64) reaches local_attention // 2,
# so the local mask is built; vocabulary 2048 so that the masked-LM head's logits are its peak,
# the token ids spread over it. bfloat16: RoPE in float32 (q and k copies), eager's float32
# softmax.
MODERNBERT = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=3,
                  intermediate_size=128, vocab_size=2048, pad_token_id=0, bos_token_id=0,
                  eos_token_id=0, cls_token_id=0, sep_token_id=0)
MODERNBERT_ROWS = dict(forward=bare, token_stride=10, half_saved=("sdpa",), **ONE_SIZE,
                       saved=(("eager", "none"), ("sdpa", "none"), ("sdpa", "full")))
MODERNBERT_FAMILIES = (
    Family("modernbert", "ModernBertModel", "ModernBertConfig", MODERNBERT, run=hidden_loss,
           **MODERNBERT_ROWS),
    Family("modernbert-masked-lm", "ModernBertForMaskedLM", "ModernBertConfig", MODERNBERT,
           run=labelled_loss, **MODERNBERT_ROWS),
)

FAMILIES: tuple[Family, ...] = (*DECODERS, *T5_FAMILIES, *DEEPSEEK_FAMILIES, *FALCON_FAMILIES,
                                *ROPE_FAMILIES, *WINDOW_FAMILIES, *ENCODER_FAMILIES,
                                *DEBERTA_FAMILIES, *MODERNBERT_FAMILIES)
BY_NAME = {family.name: family for family in FAMILIES}
assert len(BY_NAME) == len(FAMILIES), "each row's name is its test id"


def cases(listed: Callable[[Family], Iterable[Any]]) -> list[Any]:
    """pytest params (family, *case) for every case `listed(family)` gives (a tuple, or one
    value), id'd by both: `cases(lambda f: f.saved)` -> test_x[gpt2-eager-none]."""
    params = []
    for family in FAMILIES:
        for case in listed(family):
            values = case if isinstance(case, tuple) else (case,)
            params.append(pytest.param(family, *values,
                                       id="-".join([family.name, *map(str, values)])))
    return params

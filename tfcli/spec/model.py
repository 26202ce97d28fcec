"""The architecture spec: a frozen pydantic model, its derived fields, and its checks.

One Spec describes one architecture. Optional fields that derive from others (`n_kv_heads`,
`d_head`, `final_norm`, `attention_bias`, ...) are resolved once, in `_resolve`, so every consumer
reads plain values. Loading from YAML lives in `tfcli.spec.load`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tfcli.core.errors import SpecConsistencyError, shown
from tfcli.spec.head import ClassifierPooling, HeadKind, PoolerActivation, resolve_head
from tfcli.spec.disentangled import (DisentangledTerm, check_disentangled, disentangled_scale,
                                     relative_span)
from tfcli.spec.encoder import check_encoder_fields
from tfcli.spec.latent import check_latent, latent_head_dim, latent_scale
from tfcli.spec.moe import check_moe, check_moe_layout
from tfcli.spec.rope import RopeScaling, check_rope_width

Family = Literal["decoder", "encoder", "encoder-decoder"]
Activation = Literal["relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu", "geglu_tanh",
                     "swiglu_clamped"]
NormKind = Literal["layernorm", "rmsnorm", "layernorm_noaffine", "layernorm_nobias", "none"]
Placement = Literal["pre", "post", "sublayer_post", "sandwich"]
ParallelResidual = Literal["off", "one_norm", "two_norms"]
Positions = Literal["learned", "sinusoidal", "rope", "relative", "none"]
QKNorm = Literal["none", "per_head", "each_head", "full", "l2"]
LayerKind = Literal["global", "local"]
RopePairing = Literal["half", "interleaved"]
RouterScoring = Literal["softmax", "sigmoid", "sparsemixer"]
GroupScore = Literal["max", "top2_sum"]

GATED_ACTIVATIONS = frozenset({"swiglu", "geglu", "geglu_tanh", "swiglu_clamped"})
PositiveInt = Field(gt=0)


class Spec(BaseModel):
    """A Transformer architecture. Field docs are the user-facing spec reference (docs/spec.md)."""

    # allow_inf_nan=False: YAML spells infinity `.inf` (and `1e400` overflows to it); an infinite
    # or NaN float passes gt=0 checks (inf > 0) and turns every forward pass into NaN.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    # identity
    # Lengths are bounded because every command echoes them: a 100,000-character name printed
    # 100 KB per table.
    name: str = Field(min_length=1, max_length=200, description="Short identifier, e.g. 'gpt2'.")
    description: str = Field("", max_length=2000, description="One line on what this is.")
    source: str = Field("", max_length=2000,
                        description="Where the numbers come from (paper, config.json URL).")
    family: Family = Field(description="decoder | encoder | encoder-decoder.")

    # sizes
    vocab_size: int = Field(gt=0, description="Token vocabulary size.")
    max_seq_len: int = Field(gt=0, description="Longest sequence (learned positions: a "
                             "table of max_seq_len + position_offset rows).")
    d_model: int = Field(gt=0, description="Residual stream width.")
    n_heads: int = Field(gt=0, description="Query heads.")
    d_ff: int = Field(gt=0, description="FFN hidden width (per expert for MoE).")
    n_layers: int = Field(gt=0, description="Blocks per stack.")
    n_encoder_layers: int | None = Field(None, gt=0, description="Encoder blocks (encoder-decoder).")
    n_decoder_layers: int | None = Field(None, gt=0, description="Decoder blocks (encoder-decoder).")
    n_kv_heads: int | None = Field(None, gt=0, description="Key/value heads; default n_heads.")
    d_head: int | None = Field(None, gt=0, description="Per-head width; default d_model / n_heads.")

    # block recipe
    activation: Activation = Field(
        "gelu", description="FFN activation; gated ones use 3 matrices. swiglu_clamped (gpt-oss): "
        "(clip(up, -l, l) + 1) * g * sigmoid(alpha g), g = min(gate, l), l swiglu_limit.")
    swiglu_limit: float = Field(
        7.0, gt=0, description="swiglu_clamped: the gate clipped above at it, the up projection "
        "to [-limit, limit] (gpt-oss swiglu_limit 7). Only with activation swiglu_clamped.")
    swiglu_alpha: float = Field(
        1.702, gt=0, description="swiglu_clamped: the gate's g * sigmoid(alpha g) (gpt-oss "
        "1.702, the sigmoid approximation of GELU). Only with activation swiglu_clamped.")
    norm: NormKind = Field("layernorm", description="Normalisation layer (layernorm_nobias: "
                           "LayerNorm with a scale and no bias, ModernBERT norm_bias false).")
    norm_placement: Placement = Field(
        "pre", description="pre: x + F(N(x)); post: N(x + F(x)); sublayer_post: x + N(F(x)) "
        "(OLMo 2); sandwich: x + N2(F(N1(x))) (Gemma 2/3).")
    parallel_residual: ParallelResidual = Field(
        "off", description="off: attention then FFN, each with its own residual add; one_norm: "
        "x + attn(N(x)) + ffn(N(x)), one shared norm (GPT-J, Phi-2, Falcon-7B); two_norms: "
        "x + attn(N1(x)) + ffn(N2(x)) (GPT-NeoX, Falcon new_decoder_architecture). Needs "
        "norm_placement: pre.")
    norm_eps: float = Field(1e-5, gt=0, description="Norm epsilon.")
    norm_unit_offset: bool = Field(
        False, description="Every norm (q/k norms included) scales by (1 + weight) instead of "
        "weight (Gemma's RMSNorm); random weights then start at 0, an effective scale of 1. "
        "Needs a norm with a weight (layernorm or rmsnorm).")
    final_norm: bool | None = Field(
        None, description="Norm after each stack; default: true but for post (and norm: none).")
    first_attn_norm: bool = Field(
        True, description="false: block 0 has no norm before its attention, which reads the "
        "embedding norm's output as it is (ModernBERT: attn_norm is Identity on layer 0); "
        "every later block keeps its own. Needs norm_placement: pre, embedding_norm and no "
        "shared_layers.")
    positions: Positions = Field("learned", description="Position scheme.")
    rope_theta: float = Field(10000.0, gt=0, description="RoPE base.")
    rope_scaling: RopeScaling | None = Field(
        None, description="RoPE frequency scaling for long contexts (Llama 3.1, YaRN); none = plain.")
    rotary_dim: int | None = Field(
        None, gt=0, description="RoPE on the first rotary_dim dimensions of each head, the rest "
        "passed through unrotated (GPT-NeoX rotary_pct, Phi partial_rotary_factor, GPT-J "
        "rotary_dim); even, at most d_head; default d_head. Needs positions: rope.")
    rope_pairing: RopePairing = Field(
        "half", description="Which dimensions RoPE rotates together: half = i with i + r/2 "
        "(rotate_half: Llama, GPT-NeoX); interleaved = 2i with 2i + 1 (GPT-J). Needs rope.")
    nope_layers: list[int] | None = Field(
        None, min_length=1, max_length=1 << 16, description="Layers (0-based, increasing) "
        "whose attention applies no rotary embedding (NoPE; SmolLM3 every fourth). Needs rope; "
        "decoder or encoder. Default: every layer rotates.")
    relative_buckets: int = Field(32, gt=0, description="T5 relative-position buckets.")
    relative_max_distance: int = Field(128, gt=0, description="T5 relative max distance.")
    relative_bias_per_layer: bool = Field(
        False, description="Every block's self-attention has a relative-position table of its "
        "own, (relative_buckets, n_heads) per block (UMT5); default one table per stack, shared "
        "by its blocks (T5). Needs positions: relative.")
    bias: bool = Field(True, description="Biases on attention and FFN projections.")
    attention_bias: bool | None = Field(None, description="Overrides `bias` for attention.")
    attention_out_bias: bool | None = Field(
        None, description="Overrides `attention_bias` for the attention output projection alone "
        "(Qwen2: biases on q, k, v and none on o).",
    )
    ffn_bias: bool | None = Field(None, description="Overrides `bias` for the FFN.")
    attention_scale: float | None = Field(
        None, gt=0, description="Multiplier on q.k scores; default 1/sqrt(d_head) (T5: 1.0)."
    )
    attention_sinks: bool = Field(
        False, description="One learned logit per query head (`attn.sinks`, (n_heads,)) that "
        "joins each query's softmax as a key with no value: it takes probability mass from the "
        "real keys (gpt-oss). Self-attention of a decoder; not with latent attention.")
    qk_norm: QKNorm = Field(
        "none", description="Norm on queries and keys after their projections, before RoPE: "
        "per_head = the spec's norm over each head's d_head, one (d_head,) weight shared by "
        "the heads (Qwen3, Gemma 3); each_head = over each head's d_head with a weight of its "
        "own per head, (n_heads, d_head) and (n_kv_heads, d_head) (Command R+); full = over "
        "the whole q and k projections, (n_heads * "
        "d_head,) and (n_kv_heads * d_head,) weights (OLMo 2); l2 = each head's q and k "
        "divided by their root mean square (+ norm_eps), no weights, on the layers that rotate "
        "only (Llama 4's L2 norm: a nope_layers layer's q and k stay as projected); none = off. "
        "Self-attention only.",
    )
    qk_norm_after_rope: bool = Field(
        False, description="The per_head q/k norms run on the rotated queries and keys, after "
        "RoPE, not before it (Hunyuan's query_layernorm / key_layernorm). Needs qk_norm "
        "per_head and positions rope.")
    chunked_attention: bool = Field(
        False, description="The local layers attend within chunks of sliding_window tokens "
        "instead of a sliding window: a query at position p sees the keys at positions "
        "w * floor(p / w) .. p, w = sliding_window (Llama 4 attention_chunk_size). The KV cache "
        "of a local layer and trace's conventions bound it as the window. Decoder only.")
    nope_temperature_scale: float | None = Field(
        None, gt=0, description="Attention temperature tuning of the nope_layers (Llama 4 "
        "attn_scale): their queries at position p are multiplied by 1 + scale * ln(1 + "
        "floor((p + 1) / nope_temperature_floor)). Needs nope_layers; default off.")
    nope_temperature_floor: int = Field(
        8192, gt=0, description="The position step of nope_temperature_scale (Llama 4 "
        "floor_scale).")
    sliding_window: int | None = Field(
        None, gt=0, description="Sliding-window attention (Mistral): each query sees itself and "
        "the sliding_window - 1 tokens before it; default: every earlier token. Family encoder: "
        "a bidirectional window, query i sees keys j with |i - j| < sliding_window, itself and "
        "sliding_window - 1 each side (ModernBERT local_attention L: L // 2 + 1). Not "
        "encoder-decoder.",
    )
    layer_pattern: list[LayerKind] | None = Field(
        None, min_length=1, max_length=1024, description="Each layer's attention, the list "
        "repeated over the layers (Gemma 2 [local, global]; Gemma 3 five local then one "
        "global; ModernBERT [global, local, local]): local layers see sliding_window keys, global "
        "ones every earlier key (an encoder's: every key). Default: every layer local with a "
        "sliding_window, else global. Decoder or encoder.")
    rope_local_theta: float | None = Field(
        None, gt=0, description="RoPE base of the local layers of a layer_pattern, without "
        "rope_scaling (Gemma 3 rope_local_base_freq); global layers keep rope_theta and "
        "rope_scaling. Default: every layer uses rope_theta and rope_scaling.")
    attn_logit_softcap: float | None = Field(
        None, gt=0, description="Soft-cap c of the attention scores: c * tanh(s / c) on the "
        "scaled scores, before the mask and softmax (Gemma 2); default none.")

    # embeddings and heads
    tie_embeddings: bool = Field(True, description="Output head shares the token embedding.")
    lm_head: bool = Field(True, description="Has an output projection to vocab logits.")
    lm_head_bias: bool = Field(
        False, description="A bias on the untied output head (Phi-2, GPT-J).")
    tied_head_rescale: bool = Field(
        False, description="Scale hidden by d_model^-0.5 before a tied head (T5)."
    )
    embedding_norm: bool = Field(False, description="Norm after the embedding sum (BERT).")
    embedding_dim: int | None = Field(
        None, gt=0, description="Factorised embeddings (ALBERT embedding_size, ELECTRA-small): "
        "the token, position and token-type tables and the embedding norm have this width, and "
        "a (embedding_dim, d_model) projection with a bias maps their sum to d_model - even "
        "when the two are equal (ALBERT always has it). Default: d_model, no projection. "
        "Family encoder, without a vocabulary head but masked_lm's (its transform maps "
        "d_model to embedding_dim: ALBERT, ELECTRA's generator).")
    embedding_project_bias: bool = Field(
        True, description="The embedding_dim projection has a bias (ELECTRA, ALBERT); false: "
        "none (DeBERTa-v2 embed_proj). Needs embedding_dim.")
    embedding_project_first: bool = Field(
        False, description="The embedding_dim projection maps the embedding sum to d_model "
        "before the embedding norm, which is then d_model wide (DeBERTa-v2); default after it, "
        "the norm embedding_dim wide (ALBERT, ELECTRA). Needs embedding_dim.")
    position_offset: int = Field(
        0, ge=0, description="Added to every position before the learned table is read "
        "(RoBERTa, XLM-R: padding_idx + 1 = 2): the table has max_seq_len + position_offset "
        "rows, the first position_offset unused by real tokens; max_seq_len stays the longest "
        "sequence. Needs positions: learned.")
    per_stack_embeddings: bool = Field(
        False, description="Each stack of an encoder-decoder has its own learned position table "
        "and, with embedding_norm, its own embedding norm, Weights `encoder.position_embedding`, "
        "`decoder.embedding_norm` ... (BART's embed_positions and layernorm_embedding per stack); "
        "the token table stays one, shared. Needs family encoder-decoder and positions: learned.")
    decoder_start_token_id: int = Field(
        0, ge=0, description="The token an encoder-decoder's decoder starts from in `generate` "
        "and in `run` without a target (T5: 0, its pad; BART: 2, its </s>). Family "
        "encoder-decoder; below vocab_size.")
    final_logits_bias: bool = Field(
        False, description="A (1, vocab_size) bias added to the vocabulary logits that "
        "transformers keeps as a buffer (BART final_logits_bias): loaded and run, shown, counted "
        "0 as num_parameters() counts it. Needs lm_head.")
    shared_layers: bool = Field(
        False, description="One set of block weights that every block of the stack runs "
        "(ALBERT, num_hidden_groups 1): counted once, run n_layers times; the trace shows every "
        "block, block 0 owning the arrays. Family encoder.")
    scale_embeddings: bool = Field(
        False, description="Token embeddings times sqrt(d_model), rounded to the engine's "
        "dtype first (Gemma); the tied head still reads the unscaled table.")
    final_logit_softcap: float | None = Field(
        None, gt=0, description="Soft-cap c of the output logits: c * tanh(z / c) (Gemma 2); "
        "default none. Needs lm_head.")
    # Granite's scalar multipliers (its fourth, attention_multiplier, is attention_scale)
    embedding_multiplier: float | None = Field(
        None, gt=0, description="Token embeddings times this (Granite's embedding_multiplier); "
        "default none. Not with scale_embeddings.")
    residual_multiplier: float | None = Field(
        None, gt=0, description="Each sublayer's output times this before the residual add "
        "(Granite): x + m F(N(x)); default none. Pre-norm, without a parallel residual.")
    logits_scaling: float | None = Field(
        None, gt=0, description="The vocabulary logits divided by this (Granite's "
        "logits_scaling); default none. Needs lm_head.")
    type_vocab_size: int = Field(0, ge=0, description="Token-type (segment) vocabulary (BERT).")
    pooler: bool = Field(False, description="BERT pooler: tanh(W h[CLS] + b).")
    body_only: str | None = Field(
        None, min_length=1, max_length=200,
        description="Set when the source model has a task head tfcli does not build "
        "(e.g. a classifier): names it; every count and run is of the body only.",
    )
    head: HeadKind | None = Field(
        None, description="The output head: lm = vocabulary logits (lm_head); masked_lm = "
        "BERT's transform (dense with a bias when `bias`, head_activation, the spec's norm) "
        "then vocabulary logits with a bias of their own, tied or not; sequence_classification "
        "= num_labels scores per sequence, read from the pooler when `pooler`, else from the "
        "last real token (decoder: the last that is not pad_token_id, as transformers) or the "
        "first token (encoder); token_classification = num_labels scores per token (question "
        "answering: 2, start and end); none = hidden states only. Default: lm when lm_head, "
        "else none; lm_head is then derived from it.")
    num_labels: int | None = Field(
        None, gt=0, description="Classes of a classification head: a (d_model, num_labels) "
        "classifier; default 2 (transformers' default). Classification heads only.")
    classifier_bias: bool | None = Field(
        None, description="A bias on the classifier; default true, but false on a decoder's "
        "sequence_classification (transformers' `score`). Classification heads only.")
    head_activation: Activation | None = Field(
        None, description="masked_lm: the transform's activation (BERT hidden_act); default "
        "`activation`, which must then be a plain (not gated) one.")
    pad_token_id: int | None = Field(
        None, ge=0, description="sequence_classification on a decoder: each row is read at "
        "its last token that is not this id, left or right padded (transformers), among those "
        "the attention mask keeps; default: the last token the attention mask keeps.")
    pooler_activation: PoolerActivation = Field(
        "tanh", description="The pooler's activation: act(W h[first] + b). tanh = BERT's pooler "
        "and RoBERTa's classification head (classifier.dense); gelu = ELECTRA's; relu = "
        "DistilBERT's pre_classifier. Needs pooler.")
    classifier_dense: bool = Field(
        False, description="A (d_model, d_model) dense (with a bias when head_bias) and "
        "head_activation on what the classifier reads, before it: ELECTRA's discriminator "
        "(discriminator_predictions.dense on every token). Classification heads only.")
    classifier_norm: bool = Field(
        False, description="The spec's norm after classifier_dense's activation, a (d_model,) "
        "head_norm (ModernBERT's prediction head: dense, activation, norm, then the "
        "classifier). Needs classifier_dense.")
    classifier_pooling: ClassifierPooling = Field(
        "first", description="What an encoder's sequence_classification reads without a "
        "pooler: the first token, or mean = the average of the last hidden states over the "
        "real tokens the attention mask keeps (ModernBERT classifier_pooling). Needs head "
        "sequence_classification on family encoder, without pooler.")
    head_bias: bool | None = Field(
        None, description="A bias on the head's dense (masked_lm's transform, "
        "classifier_dense); default `bias` (ModernBERT: classifier_bias). masked_lm or "
        "classifier_dense only.")

    # mixture of experts
    n_experts: int = Field(0, ge=0, description="FFN experts per block; 0 = dense FFN.")
    experts_per_token: int = Field(0, ge=0, description="Experts routed per token (top-k).")
    expert_d_ff: int | None = Field(
        None, gt=0, description="Hidden width of each routed expert (Qwen moe_intermediate_size);"
        " default d_ff. d_ff stays the width of the dense FFN layers. Needs n_experts.")
    n_shared_experts: int = Field(
        0, ge=0, description="Experts every token runs besides its routed ones, added to their "
        "output (Qwen2-MoE 1). Needs n_experts.")
    shared_expert_d_ff: int | None = Field(
        None, gt=0, description="Hidden width of each shared expert (Qwen2-MoE "
        "shared_expert_intermediate_size); default expert_d_ff. Needs n_shared_experts.")
    shared_expert_gate: bool = Field(
        False, description="Scale the shared experts' output by sigmoid(x . w), w (d_model, 1) "
        "(Qwen2-MoE shared_expert_gate). Needs n_shared_experts.")
    moe_layer_step: int = Field(
        1, gt=0, description="Layer i (from 0) is MoE when i + 1 is a multiple of it (Qwen "
        "decoder_sparse_step); the others run the dense FFN of d_ff. Decoder only.")
    dense_layers: list[int] | None = Field(
        None, max_length=1024, description="Layers (from 0) that run the dense FFN of d_ff "
        "instead of experts (Qwen mlp_only_layers). Decoder only; default none.")
    norm_topk_prob: bool = Field(
        True, description="Renormalise the k routed weights to sum to 1 (Mixtral); false: the "
        "scores as they are (Qwen norm_topk_prob false).")
    router_scoring: RouterScoring = Field(
        "softmax", description="How router logits become expert scores: softmax over the "
        "experts (Mixtral, Qwen, DeepSeek-V2), sigmoid of each (DeepSeek-V3), or sparsemixer "
        "(Phi-3.5-MoE, inference): the best expert weighted by the softmax over the logits "
        "within router_jitter of it (relative), then the second best by the softmax over "
        "those within router_jitter of it, the first left out; not renormalised. Needs "
        "n_experts; sparsemixer needs experts_per_token 2.")
    router_jitter: float = Field(
        0.01, gt=0, le=1, description="sparsemixer: the relative gap, (best - logit) / "
        "max(|logit|, best) > 2 router_jitter, past which a logit leaves the softmax (Phi-3.5-MoE "
        "router_jitter_noise 0.01).")
    router_bias: bool = Field(
        False, description="A per-expert bias (n_experts,) added to the scores only to choose "
        "the experts; the weights stay the unbiased scores (DeepSeek-V3 e_score_correction_bias "
        "on sigmoid scores, ERNIE 4.5's on softmax ones; a buffer in DeepSeek's transformers "
        "modules: shown, not counted as a parameter, unless router_bias_parameter). Needs "
        "router_scoring: softmax or sigmoid.")
    router_bias_parameter: bool = Field(
        False, description="router_bias is a parameter, counted (ERNIE 4.5's moe_statics."
        "e_score_correction_bias, an nn.Parameter that takes no gradient), not a buffer. "
        "Needs router_bias.")
    router_scales_input: bool = Field(
        False, description="Each routed weight multiplies its expert's input, not its output "
        "(Llama 4: expert(w x) where others compute w expert(x)). Needs n_experts.")
    router_logits_bias: bool = Field(
        False, description="A bias (n_experts,) of the router's linear layer, added to its "
        "logits before the top-k (gpt-oss router.bias): a parameter. Needs n_experts and "
        "router_scoring softmax.")
    expert_groups: int = Field(
        1, gt=0, description="Group-limited routing (DeepSeek n_group): the experts split into "
        "this many equal groups, and a token's experts come from its topk_groups best groups "
        "only. 1 = no groups. Needs topk_groups.")
    topk_groups: int | None = Field(
        None, gt=0, description="How many groups a token's experts come from (DeepSeek "
        "topk_group); default: no group limit.")
    group_score: GroupScore = Field(
        "max", description="A group's score when routing is group-limited: its best expert's "
        "score (DeepSeek-V2 group_limited_greedy) or the sum of its best two (DeepSeek-V3), on "
        "the biased scores when router_bias.")
    routed_scaling_factor: float = Field(
        1.0, gt=0, description="Multiplier on the routed experts' weights after any "
        "renormalisation (DeepSeek routed_scaling_factor; 2.5 in V3).")

    # multi-head latent attention (DeepSeek-V2/V3)
    kv_lora_rank: int | None = Field(
        None, gt=0, description="Multi-head latent attention (MLA): every head's key and value "
        "come from one compressed latent of this width per token (RMS-normed), which with the "
        "shared RoPE key is all the KV cache keeps. Needs qk_nope_head_dim, qk_rope_head_dim and "
        "v_head_dim; d_head is then qk_nope_head_dim + qk_rope_head_dim. Decoder only.")
    q_lora_rank: int | None = Field(
        None, gt=0, description="MLA: queries through a low-rank bottleneck of this width "
        "(RMS-normed): q_a then q_b. Default: one full query projection (DeepSeek-V2-Lite).")
    qk_nope_head_dim: int | None = Field(
        None, gt=0, description="MLA: the dimensions of each query/key head without RoPE, "
        "expanded from the latent.")
    qk_rope_head_dim: int | None = Field(
        None, gt=0, description="MLA: the dimensions of each query/key head that RoPE rotates; "
        "the key part is one per token, shared by every head. Even.")
    v_head_dim: int | None = Field(
        None, gt=0, description="MLA: the width of each value head (and of each head's output).")
    latent_norm_eps: float = Field(
        1e-6, gt=0, description="MLA: epsilon of the RMSNorms on the compressed query and "
        "key/value latents (transformers fixes it at 1e-6).")

    # disentangled attention (DeBERTa-v2/v3; tfcli/spec/disentangled.py)
    disentangled_attention: list[DisentangledTerm] | None = Field(
        None, min_length=1, max_length=2, description="DeBERTa's disentangled attention: besides "
        "q.k, each query/key pair scores c2p (the query against the key's relative-position "
        "embedding) and/or p2c (the key against the query's), the scores divided by "
        "sqrt(d_head x (1 + terms)); one table of relative-position embeddings per stack, "
        "`{stack}.relative_embedding`. Family encoder; default off.")
    position_buckets: int | None = Field(
        None, gt=0, description="Disentangled attention: log-bucketed relative offsets "
        "(DeBERTa-v3 256): offsets under buckets/2 exact, longer ones log-spaced up to "
        "max_relative_positions; the table has 2 x position_buckets rows. Default: offsets "
        "clipped to +-max_relative_positions, 2 x max_relative_positions rows.")
    max_relative_positions: int | None = Field(
        None, gt=0, description="Disentangled attention: the longest relative offset (log "
        "buckets reach it; without buckets the table's half width). Default max_seq_len.")
    share_att_key: bool = Field(
        False, description="Disentangled attention: the relative-position embeddings go "
        "through the attention's own key (c2p) and query (p2c) projections (DeBERTa-v3); "
        "false: their own pos_key / pos_query projections.")
    relative_embedding_norm: bool = Field(
        False, description="Disentangled attention: the spec's norm on the relative-position "
        "table before use (DeBERTa-v2/v3 norm_rel_ebd layer_norm), `{stack}."
        "relative_embedding_norm`.")

    # engine
    init_std: float = Field(0.02, gt=0, description="Std of random initial weights.")

    @model_validator(mode="after")
    def _resolve(self) -> Spec:
        resolve_head(self)  # first: lm_head is derived from head
        check_latent(self)
        if self.kv_lora_rank is not None:  # MLA derives the head and rotary widths
            _fill(self, "d_head", latent_head_dim(self))
            _fill(self, "rotary_dim", self.qk_rope_head_dim)
            _fill(self, "n_kv_heads", self.n_heads)
        _check_heads(self)
        check_moe(self)
        check_moe_layout(self)
        check_encoder_fields(self)
        check_disentangled(self)
        _check_family_fields(self)
        _check_relative(self)
        _check_gemma(self)
        _check_scales(self)
        _check_wiring(self)
        _fill(self, "n_kv_heads", self.n_heads)
        _fill(self, "d_head", self.d_model // self.n_heads)
        _fill(self, "final_norm", self.norm_placement != "post" and self.norm != "none")
        _fill(self, "attention_bias", self.bias)
        _fill(self, "attention_out_bias", self.attention_bias)
        _fill(self, "ffn_bias", self.bias)
        stack_layers = self.n_layers if self.family == "encoder-decoder" else None
        _fill(self, "n_encoder_layers", stack_layers)
        _fill(self, "n_decoder_layers", stack_layers)
        if self.rope_scaling is not None and self.positions != "rope":
            raise SpecConsistencyError("rope_scaling", "needs positions: rope")
        _check_rotary(self)
        _fill(self, "rotary_dim", self.head_dim if self.positions == "rope" else None)
        if self.rope_scaling is not None:
            check_rope_width(self.rope_scaling, self.rotary_width)
        if self.final_norm and self.norm == "none":
            raise SpecConsistencyError("final_norm", "is true but norm is 'none'")
        if self.qk_norm not in ("none", "l2") and self.norm == "none":
            raise SpecConsistencyError("qk_norm", f"is {self.qk_norm!r} but norm is 'none'")
        return self

    # Derived values with guaranteed types (the Optional fields are filled by _resolve).
    @property
    def logits_width(self) -> int:
        """Width of what the vocabulary logits read: masked_lm's transform output, embedding_dim
        wide under factorised embeddings (ALBERT, ELECTRA's generator), else d_model."""
        return self.embedding_width if self.head == "masked_lm" else self.d_model

    @property
    def head_dim(self) -> int:
        return self.d_head or self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def rotary_width(self) -> int:
        """Dimensions of each head that RoPE rotates: rotary_dim, else all of d_head."""
        return self.rotary_dim or self.head_dim

    @property
    def layer_kinds(self) -> tuple[LayerKind, ...]:
        """Each layer's attention (a decoder's, or an encoder's), 'local' (sliding_window) or
        'global': layer_pattern repeated over the layers; without one, every layer local with
        a window, else global."""
        pattern = self.layer_pattern or ["local" if self.sliding_window else "global"]
        return tuple(pattern[i % len(pattern)] for i in range(self._pattern_layers))

    @property
    def _pattern_layers(self) -> int:
        """The layers a layer_pattern runs over: the decoder's, or an encoder's."""
        return self.encoder_layers if self.family == "encoder" else self.decoder_layers

    @property
    def local_layers(self) -> int:
        """How many layers are local: layer_kinds counted without listing it (a hostile spec
        may ask for 10**12 layers)."""
        pattern = self.layer_pattern or ["local" if self.sliding_window else "global"]
        full, rest = divmod(self._pattern_layers, len(pattern))
        return full * pattern.count("local") + pattern[:rest].count("local")

    @property
    def qk_norm_widths(self) -> tuple[int, int]:
        """Widths of the q and k norm weights: d_head each (per_head), or the whole q and k
        projections (full)."""
        if self.qk_norm == "full":
            return self.n_heads * self.head_dim, self.kv_heads * self.head_dim
        return self.head_dim, self.head_dim

    @property
    def post_sublayer_norms(self) -> bool:
        """Blocks carry attn_post_norm / ffn_post_norm (norm_placement sublayer_post, sandwich)."""
        return self.norm != "none" and self.norm_placement in ("sublayer_post", "sandwich")

    @property
    def expert_width(self) -> int:
        """Hidden width of one routed expert: expert_d_ff, else d_ff."""
        return self.expert_d_ff or self.d_ff

    @property
    def shared_width(self) -> int:
        """Hidden width of the shared experts as one FFN (n experts summed = their hidden units
        side by side): n_shared_experts x (shared_expert_d_ff, else expert_width); 0 without."""
        return self.n_shared_experts * (self.shared_expert_d_ff or self.expert_width)

    @property
    def mixed_ffn_layers(self) -> bool:
        """Some blocks of an MoE stack run the dense FFN (moe_layer_step, dense_layers)."""
        return bool(self.n_experts) and (self.moe_layer_step != 1 or bool(self.dense_layers))

    def moe_layer(self, i: int) -> bool:
        """Block i runs the experts (else the dense FFN of d_ff)."""
        return (bool(self.n_experts) and (i + 1) % self.moe_layer_step == 0
                and i not in (self.dense_layers or ()))

    def moe_layer_count(self, layers: int) -> int:
        """How many of the first `layers` blocks are MoE, counted without listing them."""
        if not self.n_experts:
            return 0
        step = self.moe_layer_step
        dense = {i for i in self.dense_layers or () if i < layers and (i + 1) % step == 0}
        return layers // step - len(dense)

    @property
    def embedding_width(self) -> int:
        """Width of the embedding tables and their norm: embedding_dim, else d_model."""
        return self.embedding_dim or self.d_model

    @property
    def embedding_norm_width(self) -> int:
        """Width of the embedding norm: d_model when the projection comes first (DeBERTa),
        else embedding_width."""
        return self.d_model if self.embedding_project_first else self.embedding_width

    @property
    def position_rows(self) -> int:
        """Rows of the learned position table: max_seq_len + position_offset."""
        return self.max_seq_len + self.position_offset

    @property
    def gated(self) -> bool:
        return self.activation in GATED_ACTIVATIONS

    @property
    def has_encoder(self) -> bool:
        return self.family in ("encoder", "encoder-decoder")

    @property
    def has_decoder(self) -> bool:
        return self.family in ("decoder", "encoder-decoder")

    @property
    def encoder_layers(self) -> int:
        if self.family == "encoder-decoder":
            return self.n_encoder_layers or self.n_layers
        return self.n_layers if self.family == "encoder" else 0

    @property
    def decoder_layers(self) -> int:
        if self.family == "encoder-decoder":
            return self.n_decoder_layers or self.n_layers
        return self.n_layers if self.family == "decoder" else 0

    @property
    def total_layers(self) -> int:
        return self.encoder_layers + self.decoder_layers

    @property
    def scale(self) -> float:
        """The multiplier applied to q.k scores: attention_scale, else d_head^-1/2 (with YaRN's
        softmax correction under multi-head latent attention, as transformers' DeepSeek)."""
        if self.attention_scale is not None:
            return self.attention_scale
        if self.disentangled_attention:
            return disentangled_scale(self)
        return latent_scale(self) if self.latent_attention else self.head_dim**-0.5

    @property
    def relative_rows(self) -> int:
        """Rows of a disentangled-attention stack's relative-position table (2 x span); 0
        without disentangled_attention."""
        return 2 * relative_span(self) if self.disentangled_attention else 0

    @property
    def latent_attention(self) -> bool:
        """Multi-head latent attention (kv_lora_rank set; tfcli/spec/latent.py)."""
        return self.kv_lora_rank is not None

    @property
    def value_dim(self) -> int:
        """Width of each value head: v_head_dim under MLA, else d_head."""
        return self.v_head_dim or self.head_dim

    @property
    def group_limited(self) -> bool:
        """Routing picks experts from the topk_groups best groups only (DeepSeek)."""
        return self.topk_groups is not None

    def with_layers(self, n_layers: int) -> Spec:
        """The same architecture truncated (or extended) to n_layers per stack."""
        update = {"n_layers": n_layers}
        if self.family == "encoder-decoder":
            update |= {"n_encoder_layers": n_layers, "n_decoder_layers": n_layers}
        return self.model_copy(update=update)

    def replace(self, **changes: object) -> Spec:
        """A validated copy with some fields changed (derived fields re-derived unless given)."""
        data = self.model_dump(exclude_unset=True) | changes
        return Spec.model_validate(data)


def _fill(spec: Spec, field: str, value: object) -> None:
    # The model is frozen; derived fields are filled once here, during validation.
    if getattr(spec, field) is None:
        object.__setattr__(spec, field, value)


def _check_heads(spec: Spec) -> None:
    if spec.d_head is None and spec.d_model % spec.n_heads:
        raise SpecConsistencyError(
            "n_heads",
            f"d_model {spec.d_model} is not divisible by n_heads {spec.n_heads}; "
            "set d_head explicitly or change n_heads",
        )
    if spec.n_kv_heads is not None and spec.n_heads % spec.n_kv_heads:
        raise SpecConsistencyError(
            "n_kv_heads",
            f"n_heads {spec.n_heads} is not divisible by n_kv_heads {spec.n_kv_heads}",
        )


def _check_family_fields(spec: Spec) -> None:
    if spec.family != "encoder-decoder":
        for field in ("n_encoder_layers", "n_decoder_layers"):
            if getattr(spec, field) is not None:
                raise SpecConsistencyError(field, "only applies to family 'encoder-decoder'")
    if spec.pooler and spec.family != "encoder":
        raise SpecConsistencyError("pooler", "only applies to family 'encoder'")
    if spec.sliding_window is not None and spec.family == "encoder-decoder":
        raise SpecConsistencyError("sliding_window", "does not apply to family "
                                   "'encoder-decoder' (only decoder or encoder)")
    if not spec.first_attn_norm and (spec.norm_placement != "pre" or not spec.embedding_norm
                                     or spec.shared_layers or spec.norm == "none"):
        raise SpecConsistencyError("first_attn_norm", "false needs norm_placement: pre, a "
                                   "norm, embedding_norm: true and no shared_layers (block 0 "
                                   "then reads the embedding norm's output)")
    if spec.tied_head_rescale and not spec.tie_embeddings:
        raise SpecConsistencyError("tied_head_rescale", "needs tie_embeddings: true")
    if spec.per_stack_embeddings and (spec.family != "encoder-decoder"
                                      or spec.positions != "learned"):
        raise SpecConsistencyError("per_stack_embeddings", "needs family 'encoder-decoder' and "
                                   f"positions: learned (got {spec.family!r}, {spec.positions!r})")
    if spec.final_logits_bias and not spec.lm_head:
        raise SpecConsistencyError("final_logits_bias", "needs lm_head: true")
    if spec.decoder_start_token_id and spec.family != "encoder-decoder":
        raise SpecConsistencyError("decoder_start_token_id", "only applies to family "
                                   "'encoder-decoder'")
    if spec.decoder_start_token_id >= spec.vocab_size:
        raise SpecConsistencyError("decoder_start_token_id", f"{spec.decoder_start_token_id:,} "
                                   f"lies outside the vocabulary [0, {spec.vocab_size:,})")


def _check_wiring(spec: Spec) -> None:
    """Residual wiring and the output-head bias: combinations the engine does not define."""
    if spec.parallel_residual != "off":
        if spec.norm_placement != "pre":
            raise SpecConsistencyError("parallel_residual", f"is {spec.parallel_residual!r}, "
                                       f"which needs norm_placement: pre (got {spec.norm_placement!r})")
        if spec.family == "encoder-decoder":
            raise SpecConsistencyError("parallel_residual", "does not apply to family "
                                       "'encoder-decoder' (its cross-attention is sequential)")
    if spec.norm_placement in ("sublayer_post", "sandwich"):
        if spec.norm == "none":
            raise SpecConsistencyError("norm_placement", f"is {spec.norm_placement!r}, which "
                                       "needs a norm (norm is 'none')")
        if spec.family == "encoder-decoder":
            raise SpecConsistencyError("norm_placement", f"{spec.norm_placement!r} does not "
                                       "apply to family 'encoder-decoder' (cross-attention "
                                       "has no post norm)")
    if spec.lm_head_bias and (not spec.lm_head or (spec.tie_embeddings
                                                   and spec.head != "masked_lm")):
        raise SpecConsistencyError("lm_head_bias", "needs an untied output head (lm_head: true, "
                                   "tie_embeddings: false) or head: masked_lm")


def _check_rotary(spec: Spec) -> None:
    """Partial rotary and the pairing convention act on RoPE alone; the rotated width pairs
    dimensions, so it is even, and lies within a head (d_head itself when rotary_dim is unset)."""
    for field, changed in (("rotary_dim", spec.rotary_dim is not None),
                           ("rope_pairing", spec.rope_pairing != "half")):
        if changed and spec.positions != "rope":
            raise SpecConsistencyError(field, f"needs positions: rope (got {spec.positions!r})")
    if spec.nope_layers is not None:
        _check_nope(spec)
    if spec.positions != "rope":
        return
    if spec.rotary_dim is None and spec.head_dim % 2:
        raise SpecConsistencyError("d_head", f"RoPE needs an even d_head, got {spec.head_dim}")
    if spec.rotary_dim is not None and spec.rotary_dim % 2:
        raise SpecConsistencyError("rotary_dim", f"must be even (got {spec.rotary_dim}): RoPE "
                                   "rotates dimensions in pairs")
    if spec.rotary_dim is not None and spec.rotary_dim > spec.head_dim:
        raise SpecConsistencyError("rotary_dim", f"{spec.rotary_dim} exceeds d_head "
                                   f"{spec.head_dim}")


def _check_nope(spec: Spec) -> None:
    """NoPE layers: RoPE layers to leave unrotated, each once, in order, within the stack."""
    if spec.positions != "rope":
        raise SpecConsistencyError("nope_layers", f"needs positions: rope (got {spec.positions!r})")
    if spec.family == "encoder-decoder":
        raise SpecConsistencyError("nope_layers", "does not apply to family 'encoder-decoder'")
    layers = spec.nope_layers or []
    if any(a >= b for a, b in zip(layers, layers[1:])) or layers[0] < 0:
        raise SpecConsistencyError("nope_layers", "must be layer indices in increasing order, "
                                   "each once, from 0")
    if layers[-1] >= spec.n_layers:
        raise SpecConsistencyError("nope_layers", f"names layer {layers[-1]}, past the last "
                                   f"({spec.n_layers - 1})")


def _check_gemma(spec: Spec) -> None:
    """Per-layer attention, soft-caps and the (1 + weight) norm: what each needs to mean
    anything (a field that would be silently ignored is an error)."""
    if spec.layer_pattern is not None:
        if spec.family == "encoder-decoder":
            raise SpecConsistencyError("layer_pattern", "does not apply to family "
                                       "'encoder-decoder' (only decoder or encoder)")
        has_local = "local" in spec.layer_pattern
        if has_local and spec.sliding_window is None:
            raise SpecConsistencyError("layer_pattern", "has local layers but no sliding_window "
                                       "says how many keys they see")
        if not has_local and spec.sliding_window is not None:
            raise SpecConsistencyError("sliding_window", "is set but layer_pattern has no "
                                       "local layer to use it")
    if spec.rope_local_theta is not None and (
            spec.positions != "rope" or "local" not in (spec.layer_pattern or ())):
        raise SpecConsistencyError("rope_local_theta", "needs positions: rope and a "
                                   "layer_pattern with local layers")
    if spec.final_logit_softcap is not None and not spec.lm_head:
        raise SpecConsistencyError("final_logit_softcap", "needs lm_head: true")
    _check_multipliers(spec)
    _check_gpt_oss(spec)
    _check_llama4(spec)
    if spec.norm_unit_offset and spec.norm not in ("layernorm", "rmsnorm"):
        raise SpecConsistencyError("norm_unit_offset", f"needs a norm with a weight "
                                   f"(layernorm or rmsnorm), got {spec.norm!r}")


def _check_gpt_oss(spec: Spec) -> None:
    """The clamped SwiGLU's constants and attention sinks where they mean something."""
    if spec.activation != "swiglu_clamped":
        for name, default in (("swiglu_limit", 7.0), ("swiglu_alpha", 1.702)):
            if getattr(spec, name) != default:
                raise SpecConsistencyError(name, "needs activation: swiglu_clamped")
    if spec.attention_sinks and (spec.family != "decoder" or spec.latent_attention):
        raise SpecConsistencyError("attention_sinks", "needs family decoder and multi-head "
                                   "attention (not latent attention)")


def _check_llama4(spec: Spec) -> None:
    """Chunked local layers and the NoPE layers' temperature where they mean something (and
    Hunyuan's q/k norms after RoPE)."""
    if spec.qk_norm_after_rope and (spec.qk_norm != "per_head" or spec.positions != "rope"):
        raise SpecConsistencyError("qk_norm_after_rope", "needs qk_norm: per_head and "
                                   "positions: rope")
    if spec.chunked_attention and (spec.family != "decoder" or spec.local_layers == 0):
        raise SpecConsistencyError("chunked_attention", "needs family decoder and local layers "
                                   "(a sliding_window, the chunk size)")
    if spec.nope_temperature_scale is not None and not spec.nope_layers:
        raise SpecConsistencyError("nope_temperature_scale", "needs nope_layers (the layers "
                                   "whose queries it scales)")
    if spec.nope_temperature_floor != 8192 and spec.nope_temperature_scale is None:
        raise SpecConsistencyError("nope_temperature_floor", "needs nope_temperature_scale")


def _check_multipliers(spec: Spec) -> None:
    """Granite's multipliers where they mean what Granite means."""
    if spec.embedding_multiplier is not None and spec.scale_embeddings:
        raise SpecConsistencyError("embedding_multiplier", "and scale_embeddings both scale "
                                   "the token embeddings: set one")
    if spec.residual_multiplier is not None and (
            spec.norm_placement != "pre" or spec.parallel_residual != "off"):
        raise SpecConsistencyError("residual_multiplier", "needs norm_placement: pre and no "
                                   "parallel_residual (x + m F(N(x)))")
    if spec.logits_scaling is not None and not spec.lm_head:
        raise SpecConsistencyError("logits_scaling", "needs lm_head: true")


def _check_relative(spec: Spec) -> None:
    """T5's buckets: a bidirectional stack halves them by direction, and each half is split into
    exact offsets (the first half) and log-spaced ones up to relative_max_distance, which must lie
    beyond the exact ones: else log(max_distance / max_exact) is 0 or negative and the bucket
    of a long offset is a division by zero or an index outside the table."""
    if spec.positions != "relative":
        if spec.relative_bias_per_layer:
            raise SpecConsistencyError("relative_bias_per_layer", f"needs positions: relative "
                                       f"(got {spec.positions!r})")
        return
    if spec.relative_buckets < 4:
        raise SpecConsistencyError(
            "relative_buckets", f"must be at least 4 (got {spec.relative_buckets}): a bidirectional "
            "stack splits them by direction, then into exact and log-spaced offsets")
    max_exact = spec.relative_buckets // (2 if spec.has_decoder else 4)
    if spec.relative_max_distance <= max_exact:
        raise SpecConsistencyError(
            "relative_max_distance", f"must exceed {max_exact:,}, the exact offsets of "
            f"{spec.relative_buckets:,} buckets (got {spec.relative_max_distance:,})")



# Ranges outside which a forward pass is wrong, not merely unusual. Real initialisations lie
# well inside (GPT-2 0.02, T5 1.0): at these ends a chain of six weight factors (two projections
# and the q.k scores of one block: s^6 = 1e-36 .. 1e18) stays within float32's normal range
# (1.2e-38 .. 3.4e38); past them activations underflow to 0 or overflow to inf within a layer
# or two (init_std 1e20: s^2 = 1e40 in the first product).
INIT_STD_RANGE = (1e-6, 1e3)
# norm_eps is added to a variance in the engine's dtype, float32 at the narrowest: it must stay
# a normal non-zero float32 there (1e-50 rounds to 0, and a constant row then divides 0 by 0;
# 1e39 rounds to inf and every norm outputs 0). At 1 or more it outweighs the O(1) variance it
# only guards against dividing by zero.
FLOAT32_TINY = 1.1754943508222875e-38  # np.finfo(np.float32).tiny; no NumPy import here
FLOAT32_MAX = 3.4028234663852886e38  # np.finfo(np.float32).max
NORM_EPS_RANGE = (FLOAT32_TINY, 1.0)
# Granite's multipliers are float32 constants in the engine's narrowest dtype, as in torch: a
# value float32 cannot hold would be 0 or inf before any activation is scaled by it.
MULTIPLIER_RANGE = (FLOAT32_TINY, FLOAT32_MAX)
_MULTIPLIERS = ("embedding_multiplier", "residual_multiplier", "logits_scaling",
                "swiglu_limit", "swiglu_alpha", "nope_temperature_scale")


_SCALE_RANGES = (  # (field, (low, high), format of low, why)
    ("init_std", INIT_STD_RANGE, "g", "beyond, products of a few weights leave float32's range "
     "and the forward pass turns to 0 or inf/NaN"),
    ("latent_norm_eps", NORM_EPS_RANGE, ".3g", "it is added to a variance in the engine's dtype"),
    ("norm_eps", NORM_EPS_RANGE, ".3g", "it is added to a variance in the engine's dtype, float32 "
     "at the narrowest, and must stay a small non-zero number there (float32 rounds 1e-50 to 0 "
     "and 1e39 to inf)"),
)


def _check_scales(spec: Spec) -> None:
    for name, (low, high), low_format, why in _SCALE_RANGES:
        value = getattr(spec, name)
        if not low <= value <= high:
            raise SpecConsistencyError(
                name, f"must lie in [{low:{low_format}}, {high:g}] (got {shown(value)}): {why}")
    low, high = MULTIPLIER_RANGE
    for name in _MULTIPLIERS:
        value = getattr(spec, name)
        if value is not None and not low <= value <= high:
            raise SpecConsistencyError(
                name, f"must lie in [{low:.3g}, {high:.3g}] (got {shown(value)}): the engine "
                "holds it as a float32 constant, which would be 0 or inf")


FIELD_NAMES: tuple[str, ...] = tuple(Spec.model_fields)


def spec_json_schema() -> dict[str, object]:
    """JSON Schema (draft 2020-12) of the spec format, for editors validating YAML as users type."""
    schema = Spec.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/tfcli/tfcli/spec.schema.json",
        **schema,
    }

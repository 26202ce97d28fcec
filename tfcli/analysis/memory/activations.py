"""Peak activation memory of one inference forward pass: the largest set of arrays alive at once.

Not a sum of op outputs (that is what `tfcli trace` adds up): each phase of a block (norm,
attention, output projection, FFN) holds the arrays the code still references there, and the
peak is the largest phase. Three implementations are modelled, each walked in its own op order:

  engine  tfcli's NumPy engine (tfcli/engine): attention in query blocks of ~4 MB of scores run
          on `workers` threads at once (no (B, H, T, S) array ever exists), the FFN in rounds of
          rows split by hidden units across the workers;
  eager   transformers' eager attention: (B, H, T, S) scores and probabilities materialised
          (two of them at the softmax), K/V repeated to every query head for GQA;
  sdpa    transformers' fused attention (torch sdpa / flash): no score matrix leaves the kernel.

Which buffers are freed when is written next to each phase (docs/memory.md has the whole list).
Sizes are in elements of the compute dtype unless a name says bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfcli.analysis.memory import latent as latent_memory
from tfcli.analysis.memory import rope_layouts
from tfcli.core.errors import BadInputError, not_one_of
from tfcli.spec.model import Spec

ATTENTION_KINDS = ("engine", "eager", "sdpa")

# tfcli/engine/attention.py and ffn.py sizes (the same constants: changed there, change here)
QUERY_BLOCK_BYTES = 1 << 22
MIN_QUERY_BLOCK = 16
HIDDEN_SLICE_BYTES = 1 << 22
MIN_SPLIT_ROWS = 16
MIN_ROWWISE_ROWS = 256

# Hidden-width arrays alive per worker while the engine's activation runs, its input included
# (tfcli/engine/ops.py): relu / gelu_tanh: input + one result; silu: input, -x and exp(-x).
# Exact gelu runs Cody's erf: x/sqrt2, |y|, the output, four interval masks, each interval's
# gathered copy and its rational function's temporaries: 4 + 8 x (share of |x|/sqrt2 in the
# middle interval), which depends on the values: measured 9.1 (bert-base at init) to 10.5 (a
# d_model 64 spec) on random-init hidden values (tests/analysis/memory/test_activations.py); 10 taken.
ENGINE_ACTIVATION_SLICES = {"relu": 2.0, "gelu_tanh": 2.0, "silu": 3.0, "gelu": 10.0}
# transformers' MLP: hidden-width tensors alive at its peak. gelu_new (GPT-2) is a Python
# formula: x, x^3, 0.044715 x^3 ... four at once; F.gelu / relu: input and output; gated:
# act(gate), up and their product.
HF_ACTIVATION_TENSORS = {"relu": 2.0, "gelu": 2.0, "gelu_tanh": 4.0, "silu": 2.0}
HF_GATE_TENSORS = {"relu": 2.0, "gelu": 2.0, "gelu_tanh": 2.0, "silu": 2.0}  # Gemma: F.gelu
GATE_OF = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh"}
# Projections a checkpoint's transformers modules fuse into one linear: "qkv" (Phi-3 qkv_proj,
# GPT-NeoX query_key_value), "gate_up" (Phi-3 gate_up_proj). The spec describes the maths, not
# the module layout, so the caller says (transformers' model_type: FUSED_MODULES).
# "falcon_qkv": Falcon's query_key_value with the attention module that splits it (its own
# copies, an always materialised causal mask): tfcli/analysis/memory/falcon.py.
FUSIONS = ("qkv", "gate_up", "falcon_qkv")
FUSED_MODULES: dict[str, frozenset[str]] = {
    "phi3": frozenset({"qkv", "gate_up"}),
    "gpt_neox": frozenset({"qkv"}),
    "falcon": frozenset({"falcon_qkv"}),
}


@dataclass(frozen=True)
class Workload:
    """One forward pass: batch x seq_len tokens in a dtype of `itemsize` bytes."""

    batch: int
    seq_len: int
    itemsize: float
    workers: int = 1  # engine only: threads running query blocks / FFN slices at once

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len


@dataclass(frozen=True)
class ActivationPeak:
    """The largest live set of one forward pass and the phase it happens in."""

    bytes: int
    phase: str  # e.g. "block attention scores", "logits"
    phases: tuple[tuple[str, int], ...]  # every phase's live bytes, in op order


def check_modelled(spec: Spec) -> None:
    """BadInputError for the variants whose live sets are not modelled, named."""
    if spec.n_experts and not spec.gated:
        raise BadInputError(f"{spec.name}: activation memory of mixture-of-experts FFNs with "
                            "ungated experts is not modelled yet (Mixtral-, Qwen-MoE- and "
                            "DeepSeek-style routing over gated experts is)")
    if spec.positions == "relative" and spec.family == "decoder":
        raise BadInputError(f"{spec.name}: activation memory of a decoder-only model with a "
                            "relative position bias is not modelled yet (T5's encoder-decoder "
                            "and encoder stacks are)")


def _activation(spec: Spec) -> str:
    return GATE_OF.get(spec.activation, spec.activation)


# --- tfcli's engine -------------------------------------------------------------------------


def _engine_blocks(spec: Spec, work: Workload) -> float:
    """Score blocks in flight at once (attention.attend): each block of c queries holds its
    B x H x c x K scores, its scaled queries and its mixed values; a causal block sees only
    the K keys up to its last query. The pool runs `workers` consecutive blocks at once: the
    largest such window counts."""
    s, t = spec, work.seq_len
    per_block = max(MIN_QUERY_BLOCK, QUERY_BLOCK_BYTES // int(s.n_heads * t * work.itemsize))
    c = min(per_block, max(MIN_QUERY_BLOCK, -(-t // (work.workers * 2))), t)
    causal = s.family == "decoder"
    n_blocks = -(-t // c)
    window = min(work.workers, n_blocks)
    # blocks only grow towards the end (more keys) but the last may be short: the widest
    # window is among the last window + 1 blocks, so only those are sized
    first = max(0, n_blocks - window - 1)
    sizes = [min(c, t - q0) * ((min(t, q0 + c) if causal else t) + 2 * s.head_dim)
             for q0 in range(first * c, t, c)]
    widest = max(sum(sizes[i:i + window]) for i in range(len(sizes) - window + 1))
    return work.batch * s.n_heads * widest


def _norm_scratch(work: Workload, width: int) -> float:
    """A norm's temporaries beside its output: centred and squared rows (layer norm) or the
    square and the product (RMS norm), for every row block at once (parallel.rowwise)."""
    parallel = work.tokens >= MIN_ROWWISE_ROWS and work.workers > 1
    return (2 if parallel else 1) * work.tokens * width


def _engine_ffn(spec: Spec, work: Workload) -> float:
    """The FFN's transient arrays beside its (N, d) output (ffn.dense_ffn): per round of rows,
    the workers' (rows, d) partial sums and each worker's hidden slice through the activation."""
    slices = ENGINE_ACTIVATION_SLICES[_activation(spec)] + (1 if spec.gated else 0)
    n, f, d = work.tokens, spec.d_ff, spec.d_model
    if n < MIN_SPLIT_ROWS or work.workers == 1:
        return n * f * slices
    width = -(-f // work.workers)
    cap = max(MIN_SPLIT_ROWS, int(HIDDEN_SLICE_BYTES // (width * work.itemsize)))
    rows = -(-n // -(-n // cap))
    workers = -(-f // width)
    return workers * rows * d + workers * rows * width * slices


def qkv_elements(spec: Spec, tokens: int) -> float:
    return tokens * (spec.n_heads + 2 * spec.kv_heads) * spec.head_dim


def _rope_copies(spec: Spec, tokens: int) -> float:
    """RoPE's new q and k (the fused Q/K/V output stays alive through v's view) and its tables."""
    if spec.positions != "rope":
        return 0
    return tokens * (spec.n_heads + spec.kv_heads) * spec.head_dim + 2 * tokens * spec.rotary_width


def _engine_phases(spec: Spec, work: Workload) -> list[tuple[str, float]]:
    """Live elements per phase of the engine's forward (tfcli/engine/model.py): the embedding
    output stays referenced by forward() throughout, a block's input by forward_hidden's loop,
    a sublayer's normed input by _sublayer until it returns."""
    s, n, d = spec, work.tokens, spec.d_model
    embed = n * d
    x_in = n * d if s.n_layers > 1 else 0  # block 0's input is the embedding itself
    pre = s.norm != "none" and s.norm_placement != "post"
    h = n * d if pre else 0  # pre-norm: the normed input beside the residual
    qkv = qkv_elements(s, n) + _rope_copies(s, n)
    attn_out = n * s.n_heads * s.head_dim
    phases = [
        ("attention norm", embed + x_in + h + _norm_scratch(work, d)),
        ("attention scores", embed + x_in + h + qkv + attn_out + _engine_blocks(s, work)),
        ("attention output", embed + x_in + h + qkv + attn_out + n * d),
        ("FFN norm", embed + x_in + 2 * n * d + _norm_scratch(work, d)),
        ("FFN", embed + x_in + n * d + h + n * d + _engine_ffn(s, work)),
        ("final norm", embed + 2 * n * d + _norm_scratch(work, d)),
    ]
    if s.post_sublayer_norms:  # x + P(F(..)): F's output, its norm and the norm's scratch
        phases.append(("sublayer output norm", embed + x_in + 2 * n * d + h + 2 * n * d
                       + _norm_scratch(work, d)))
    return phases + _head_phases(s, work, embed + n * d)


def _head_phases(spec: Spec, work: Workload, held: float) -> list[tuple[str, float]]:
    """The vocabulary logits (B, T, V) beside the final hidden state (and the embedding)."""
    if not spec.lm_head:
        return []
    return [("logits", held + work.tokens * spec.vocab_size)]


# --- transformers ---------------------------------------------------------------------------


def fused_qkv_extra(spec: Spec, tokens: int, fused: frozenset[str]) -> float:
    """A fused Q/K/V projection (Phi-3, GPT-NeoX): v is a view of the fused output, so
    its q and k parts stay alive beside RoPE's new q and k (without RoPE q and k are views)."""
    if "qkv" not in fused or spec.positions != "rope":
        return 0
    return tokens * (spec.n_heads + spec.kv_heads) * spec.head_dim


def hf_phases(spec: Spec, work: Workload, eager: bool,
               fused: frozenset[str] = frozenset()) -> list[tuple[str, float]]:
    """Live elements per phase of a transformers forward (no_grad, use_cache=False): the model
    keeps inputs_embeds (and GPT-2's position embeddings) referenced to the end, the layer loop
    its layer's input, the layer its residual; eager attention returns its probabilities, which
    the layer holds until it returns; an eager decoder builds a (B, 1, T, S) float mask."""
    s, n, d, t = spec, work.tokens, spec.d_model, work.seq_len
    # ALBERT (shared layers): AlbertModel keeps its (N, e) embedding output and the encoder
    # projects it into block 0's own (N, d) input (ElectraModel drops its embedding output)
    albert = s.shared_layers and s.embedding_dim is not None
    held = n * (s.embedding_dim if albert else d)
    held += t * d if s.positions == "learned" and s.family == "decoder" else 0
    held += work.batch * t * t if eager and s.family == "decoder" else 0
    held += 2 * t * s.rotary_width if s.positions == "rope" else 0
    x_in = n * d if s.n_layers > 1 or albert else 0
    pre = s.norm_placement not in ("post", "sublayer_post")  # OLMo 2: the sublayer reads x
    h = n * d if pre else 0
    probs = work.batch * s.n_heads * t * t if eager else 0
    repeat = 2 * n * s.n_heads * s.head_dim if eager and s.kv_heads < s.n_heads else 0
    core = 2 * probs if eager else n * s.n_heads * s.head_dim  # eager: scores and softmax
    if eager and s.positions == "rope" and work.itemsize < 4:
        # Llama's eager softmax(dtype=float32) on 16-bit scores: a float32 copy, then the
        # float32 result, beside the masked scores (8 bytes more per score, in elements here)
        core = probs * (1 + 8 / work.itemsize)
    table = HF_GATE_TENSORS if s.gated else HF_ACTIVATION_TENSORS
    # gated: the up projection beside the activation's tensors; fused gate|up (Phi-3): the
    # whole (N, 2F) projection, gate and up its views
    mlp = n * s.d_ff * (table[_activation(s)] + (0 if not s.gated else 2 if "gate_up" in fused
                                                  else 1))
    if s.positions == "relative" and s.gated and _activation(s) == "gelu_tanh":
        # T5 v1.1 / mT5's gated-gelu: gelu_new's formula (4 at once) on the gate, the up
        # projection not made yet (measured on T5EncoderModel)
        mlp = n * s.d_ff * HF_ACTIVATION_TENSORS["gelu_tanh"]
    qkv = qkv_elements(s, n) + fused_qkv_extra(s, n, fused)
    phases = [
        ("attention scores", held + x_in + h + qkv + repeat + core),
        ("attention output", held + x_in + h + qkv + probs + 2 * n * d),
        ("FFN", held + x_in + n * d + h + probs + mlp),
    ]
    if s.latent_attention:  # MLA's projections and core (latent_memory.py)
        scores, output = latent_memory.latent_attention_live(s, work, eager)
        phases[:2] = [("attention scores", held + x_in + h + scores),
                      ("attention output", held + x_in + h + output)]
    if s.n_experts:  # Mixtral-style layers: the experts' phase, beside or instead of the FFN
        if s.moe_layer_count(s.n_layers) == s.n_layers:
            phases = phases[:2]
        if latent_memory.deepseek_moe(s):  # routed experts first, then the shared ones
            return phases + latent_memory.deepseek_moe_phases(
                s, work, held + x_in + n * d + h + probs, table[_activation(s)] + 1) \
                + _head_phases(s, work, held + n * d)
        # Qwen-MoE runs its shared experts first: their output waits beside the routed ones
        shared = n * d if s.n_shared_experts else 0
        phases.append(("MoE experts", held + x_in + n * d + h + probs + shared + moe_live(s, work)))
        if s.n_shared_experts:
            phases.append(("shared experts", held + x_in + n * d + h + probs
                           + n * s.shared_width * (table[_activation(s)] + 1)))
    if s.norm_placement == "post":  # BERT: at the output LayerNorm the activation output, its
        # projection, the residual sum and the norm's output beside the sublayer input
        phases.append(("FFN output norm", held + x_in + n * d + n * s.d_ff + 3 * n * d + probs))
    # partial rotary's kept projections, StableLM's layer, OLMo 2's float32 RoPE
    phases = rope_layouts.adjust_phases(s, work, eager, fused, phases)
    return phases + _head_phases(s, work, held + n * d)


def moe_live(spec: Spec, work: Workload) -> float:
    """transformers' experts (grouped_mm over every routed slot at once: N x k slots): each
    slot's gathered input, gate/up product, activation and gated product, plus the router's
    float32 logits and the int64 / float32 top-k indices, sorts and weights (4E + 44k bytes a
    token, measured on MixtralForCausalLM), in elements of the compute dtype."""
    s, n = spec, work.tokens
    slots = n * s.experts_per_token
    routing = n * (4 * s.n_experts + 44 * s.experts_per_token) / work.itemsize
    # after the down projection: the gathered input, the output, its weighted and its
    # unsorted copy (4 d a slot; more than d + 4 F_e when d > 4 F_e / 3, as in DeepSeek-V3)
    return slots * max(s.d_model + 4 * s.expert_width, 4 * s.d_model) + routing


# what of a spec the engine's live set does not model yet, named in its refusal
ENGINE_UNMODELLED: tuple[tuple[str, object], ...] = (
    ("latent-attention (MLA) live set", lambda s: s.latent_attention),
    ("mixture-of-experts live set", lambda s: s.n_experts),
    ("encoder-decoder live set", lambda s: s.family == "encoder-decoder"),
    ("live set with a relative position bias", lambda s: s.positions == "relative"),
)


def check_engine_modelled(spec: Spec) -> None:
    """BadInputError for the variants whose engine live set (tfcli's own) is not modelled."""
    for what, applies in ENGINE_UNMODELLED:
        if applies(spec):  # type: ignore[operator]
            raise BadInputError(f"{spec.name}: the engine's {what} is not modelled yet: use "
                                "--attention sdpa or eager (transformers')")


def check_fused(fused: frozenset[str]) -> None:
    unknown = sorted(set(fused) - set(FUSIONS))
    if unknown:
        raise BadInputError(not_one_of("--fused", unknown[0], FUSIONS))
    if {"qkv", "falcon_qkv"} <= fused:
        raise BadInputError("--fused: qkv and falcon_qkv are two layouts of one fused Q/K/V "
                            "projection: name one")


def checkpoint_fusions(spec_arg: str) -> frozenset[str]:
    """The projections a model directory's transformers modules fuse (FUSED_MODULES by its
    config.json model_type); none for a spec file, a bundled name or a GGUF file."""
    from tfcli.checkpoints.configs import model_type, read_config
    from tfcli.spec.load import is_model_dir

    if not is_model_dir(spec_arg):
        return frozenset()
    return FUSED_MODULES.get(model_type(read_config(spec_arg)), frozenset())


def inference_peak(spec: Spec, work: Workload, attention: str = "engine",
                   fused: frozenset[str] = frozenset()) -> ActivationPeak:
    """The peak live activations of one forward pass of `work` under `attention` (engine, eager
    or sdpa) with transformers' modules fusing the `fused` projections (FUSIONS; the engine
    has its own layout), weights and KV cache excluded."""
    check_modelled(spec)
    check_fused(fused)
    if attention not in ATTENTION_KINDS:
        raise BadInputError(f"unknown attention implementation '{attention}': use one of "
                            f"{', '.join(ATTENTION_KINDS)}")
    if attention == "engine":
        check_engine_modelled(spec)
    if spec.relative_bias_per_layer and spec.positions == "relative":
        # UMT5: every block makes and frees its own biases (T5's shared ones taken for them
        # measured 1.09-1.30 of UMT5ForConditionalGeneration's live set)
        raise BadInputError(f"{spec.name}: the inference live set with a relative bias table "
                            "per block (UMT5) is not modelled yet (its training activations are)")
    if spec.disentangled_attention:  # DeBERTa (deberta_memory builds on this module)
        from tfcli.analysis.memory import deberta as deberta_memory

        raw = (deberta_memory.engine_phases(spec, work) if attention == "engine"
               else deberta_memory.hf_phases(spec, work))  # DebertaV2: eager only
    elif attention == "engine":
        raw = _engine_phases(spec, work)
    elif spec.family == "encoder-decoder":
        from tfcli.analysis.memory.seq2seq import seq2seq_phases  # (it builds on this module)

        raw = seq2seq_phases(spec, work, attention == "eager", fused)
    elif spec.family == "encoder" and spec.positions == "rope":  # ModernBertModel's layout
        from tfcli.analysis.memory import modernbert as modernbert_memory  # (it builds on this module)

        raw = modernbert_memory.hf_phases(spec, work, attention == "eager")
    elif "falcon_qkv" in fused:  # Falcon's own attention module (falcon_memory builds on this one)
        from tfcli.analysis.memory.falcon import check_falcon_shaped, falcon_phases

        check_falcon_shaped(spec)
        raw = falcon_phases(spec, work, attention == "eager")
    else:
        from tfcli.analysis.memory import window as window_memory  # (it builds on this module)

        attention = window_memory.softcapped_as_eager(spec, attention)  # Gemma 2: no sdpa
        raw = window_memory.adjust_phases(spec, work, attention == "eager",
                                          hf_phases(spec, work, attention == "eager", fused))
        if spec.positions == "relative":  # T5EncoderModel: the bias its stack holds
            from tfcli.analysis.memory.seq2seq import bucket_phase, relative_bias

            held, more = relative_bias(spec, work, attention == "eager", decoder=False)
            raw = [(name, e + held + (more if name == "attention scores" else 0))
                   for name, e in raw] + bucket_phase(spec, work, attention == "eager", False, 0)
    phases = tuple((name, int(round(elements * work.itemsize))) for name, elements in raw)
    name, peak = max(phases, key=lambda p: p[1])
    return ActivationPeak(peak, name, phases)

"""`tfcli memory`: what a model needs on an accelerator, part by part, for inference or training.

build_memory_plan(spec, options) -> MemoryPlan takes ONE batch and ONE sequence length, so a
sweep is a list of plans (tfcli.analysis.sweep calls it per point). Every part is a sum, never a
maximum: the total is what one GPU holds at its peak.

Inference: weights (per dtype; int8 / int4 with one float16 scale per group of weights), the KV
cache, and the largest live set of one forward pass (tfcli.analysis.memory.activations).
Training (per GPU): weights, gradients, optimizer state, float32 master weights under mixed
precision, the activations autograd keeps (tfcli.analysis.memory.saved), the logits' and
loss's working set, and, with full recomputation, one block's saved set recomputed. ZeRO stages
shard over the data-parallel GPUs, tensor parallelism over --tp. docs/memory.md states each term.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from tfcli.analysis.memory.activations import ATTENTION_KINDS, Workload, inference_peak
from tfcli.analysis.memory.base import FALCON_QKV
from tfcli.analysis.memory.layouts.falcon import new_architecture
from tfcli.analysis.memory.saved import RECOMPUTE, SavedActivations, saved_activations
from tfcli.analysis.memory.saved_lora import lora_saved_activations
from tfcli.core.dtypes import DTYPE_BYTES, MEMORY_DTYPES
from tfcli.core.errors import BadInputError, check_names_listed_once, not_one_of, shown
from tfcli.spec.counts import Component, components, kv_cache_bytes, total_parameters
from tfcli.spec.model import Spec

OPTIMIZERS = ("adamw", "adam", "sgd", "adam8bit")
PLAN_DTYPES = MEMORY_DTYPES  # weights (and compute) dtype
QUANTISED = {"int8": 8, "int4": 4}  # bits per quantised weight
SCALE_BYTES = 2  # one float16 scale per group of quantised weights (symmetric, no zero point)
FLOAT32 = 4
STEP_BYTES = 4  # torch Adam/AdamW: a float32 `step` tensor per parameter tensor
# bitsandbytes' 8-bit Adam (Optimizer8bit, blockwise): two uint8 states and a float32 absmax per
# block of 256 values each; tensors under 4096 elements keep float32 states.
ADAM8_BLOCK, ADAM8_MIN_SIZE = 256, 4096
MAX_SIZE = 1 << 40  # batch, seq_len, GPUs: past any real run, and the search bounds stay small
LORA_TARGETS = {"q": "attn.wq", "k": "attn.wk", "v": "attn.wv", "o": "attn.wo",
                "gate": "ffn.w_gate", "up": "ffn.w_up", "down": "ffn.w_down"}


@dataclass(frozen=True)
class MemoryOptions:
    """One point of the plan: one batch, one sequence length."""

    batch: int = 1
    seq_len: int | None = None  # None: min(max_seq_len, 1024)
    dtype: str = "bfloat16"  # weights and compute (int8 / int4: weights only, compute bfloat16)
    kv_dtype: str | None = None  # None: the compute dtype
    attention: str = "sdpa"  # engine | eager | sdpa
    group_size: int = 128  # int8 / int4 quantisation group
    stored_bytes: int | None = None  # a checkpoint's weights as stored (GGUF, quantised)
    train: bool = False
    optimizer: str = "adamw"
    recompute: str = "none"
    gpus: int = 1
    zero: int = 0
    tp: int = 1
    lora_rank: int | None = None
    lora_targets: tuple[str, ...] = ("q", "v")
    param_tensors: int | None = None  # torch parameter tensors (None: tfcli's arrays)
    dropout: bool = False  # training: the model's dropouts on (p > 0: their noise is saved)
    workers: int = 1  # engine attention: threads running query blocks at once
    # projections the checkpoint's transformers modules fuse: "qkv", "gate_up" (Phi-3 both,
    # GPT-NeoX qkv: activations.FUSED_MODULES by model_type); the spec does not say
    fused: tuple[str, ...] = ()

    def resolved_seq_len(self, spec: Spec) -> int:
        return self.seq_len if self.seq_len is not None else min(spec.max_seq_len, 1024)


@dataclass(frozen=True)
class MemoryPart:
    name: str
    bytes: int
    note: str = ""


@dataclass(frozen=True)
class MemoryPlan:
    spec_name: str
    mode: str  # "inference" or "training"
    batch: int
    seq_len: int
    options: MemoryOptions
    parts: tuple[MemoryPart, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def total(self) -> int:
        return sum(p.bytes for p in self.parts)

    def part(self, name: str) -> int:
        return sum(p.bytes for p in self.parts if p.name == name)

    def to_dict(self) -> dict[str, object]:
        return {"spec": self.spec_name, "mode": self.mode, "batch": self.batch,
                "seq_len": self.seq_len, "options": asdict(self.options),
                "parts": [asdict(p) for p in self.parts], "total_bytes": self.total,
                "notes": list(self.notes)}

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        rows: list[list[object]] = [[p.name, p.bytes, p.note] for p in self.parts]
        return ["part", "bytes", "note"], rows + [["total", self.total, ""]]


# --- checks ---------------------------------------------------------------------------------


def check_options(spec: Spec, o: MemoryOptions) -> None:
    """BadInputError, one line naming the option, for values the plan cannot take."""
    if o.dtype not in PLAN_DTYPES:
        raise BadInputError(not_one_of("--dtype", o.dtype, PLAN_DTYPES))
    if o.attention not in ATTENTION_KINDS:
        raise BadInputError(not_one_of("--attention", o.attention, ATTENTION_KINDS))
    if o.optimizer not in OPTIMIZERS:
        raise BadInputError(not_one_of("--optimizer", o.optimizer, OPTIMIZERS))
    if o.recompute not in RECOMPUTE:
        raise BadInputError(not_one_of("--recompute", o.recompute, RECOMPUTE))
    counts = {"--batch": o.batch, "--seq-len": o.seq_len, "--gpus": o.gpus, "--tp": o.tp,
              "--lora-rank": o.lora_rank, "--group-size": o.group_size, "workers": o.workers}
    for option, value in counts.items():  # the one option at fault, and its value
        if value is not None and not 1 <= value <= MAX_SIZE:
            raise BadInputError(f"{option} must be between 1 and 2^40 ({MAX_SIZE:,}), got "
                                f"{shown(value)}")
    seq_len = o.resolved_seq_len(spec)
    if spec.positions == "learned" and seq_len > spec.max_seq_len:
        raise BadInputError(f"--seq-len {seq_len} exceeds max_seq_len {spec.max_seq_len} of "
                            f"{spec.name} (learned positions have no row past it)")
    if o.gpus % o.tp:
        raise BadInputError(f"--gpus {o.gpus} is not a multiple of --tp {o.tp}")
    if o.zero not in (0, 1, 2, 3):
        raise BadInputError(f"--zero must be 0, 1, 2 or 3 (got {o.zero})")
    if o.train and o.dtype in QUANTISED and o.lora_rank is None:
        raise BadInputError(f"--train with --dtype {o.dtype}: quantised weights train only "
                            "as a frozen base under LoRA (add --lora-rank)")
    if o.train and o.attention == "engine":
        raise BadInputError("--train needs --attention eager or sdpa (the engine has no backward)")
    if o.attention == "engine" and o.dtype != "float32":
        raise BadInputError(f"--attention engine with --dtype {o.dtype}: tfcli's engine computes "
                            "in float32 (or float64): add --dtype float32")
    if o.lora_rank is not None:
        check_lora_targets(o.lora_targets)


def check_lora_targets(targets: tuple[str, ...]) -> None:
    """BadInputError for --lora-targets naming no layer, one twice or an unknown one (with
    the closest name)."""
    allowed = tuple(LORA_TARGETS)
    check_names_listed_once("--lora-targets", targets, allowed)
    for target in targets:
        if target not in LORA_TARGETS:
            raise BadInputError(not_one_of("--lora-targets", target, allowed))


# --- weights --------------------------------------------------------------------------------


def _is_block_matrix(c: Component) -> bool:
    """A linear layer's weight inside a block (what int8 / int4 quantise, what LoRA adapts):
    the blueprint's role says which arrays are matrices."""
    return c.role == "matrix" and ".blocks." in c.path


def weight_bytes(spec: Spec, dtype: str, group_size: int = 128) -> int:
    """Weights in `dtype`; int8 / int4 quantise the blocks' linear matrices (one float16 scale per
    group of `group_size` weights) and keep embeddings, norms and biases in 16 bits."""
    if dtype not in QUANTISED:
        return int(total_parameters(spec) * DTYPE_BYTES[dtype])
    bits = QUANTISED[dtype]
    quantised = sum(c.count for c in components(spec) if _is_block_matrix(c))
    rest = total_parameters(spec) - quantised
    scales = -(-quantised // group_size) * SCALE_BYTES
    return quantised * bits // 8 + scales + rest * 2


def _compute_itemsize(dtype: str) -> int:
    return 2 if dtype in QUANTISED else int(DTYPE_BYTES[dtype])


# --- inference ------------------------------------------------------------------------------


def _inference_parts(spec: Spec, o: MemoryOptions, seq_len: int) -> list[MemoryPart]:
    itemsize = _compute_itemsize(o.dtype)
    kv_dtype = o.kv_dtype or ("bfloat16" if o.dtype in QUANTISED else o.dtype)
    if o.stored_bytes is not None:
        weights = MemoryPart("weights", o.stored_bytes, "as stored in the checkpoint")
    else:
        note = (f"{o.dtype}, a float16 scale per {o.group_size} weights; embeddings, norms "
                "16-bit") if o.dtype in QUANTISED else o.dtype
        weights = MemoryPart("weights", weight_bytes(spec, o.dtype, o.group_size), note)
    kv = kv_cache_bytes(spec, seq_len, o.batch, kv_dtype) if spec.family != "encoder" else 0
    kv = kv * _cached_kv_heads(spec, o) // spec.kv_heads
    peak = inference_peak(spec, Workload(o.batch, seq_len, itemsize, o.workers), o.attention,
                          frozenset(o.fused))
    return [weights, MemoryPart("KV cache", kv, f"{kv_dtype}, {seq_len} tokens"),
            MemoryPart("activations", peak.bytes,
                       f"largest live set of one forward ({o.attention}): {peak.phase}")]


def _cached_kv_heads(spec: Spec, o: MemoryOptions) -> int:
    """Key/value heads the KV cache holds: the spec's, but for transformers' Falcon module with
    new_decoder_architecture, which caches k and v already repeated to every query head
    (measured on FalconForCausalLM: (B, H, T, dh) keys with 2 key/value heads of 4)."""
    if FALCON_QKV in o.fused and o.attention != "engine" and new_architecture(spec):
        return spec.n_heads
    return spec.kv_heads


# --- training -------------------------------------------------------------------------------


TensorSizes = list[tuple[int, int]]  # (elements per tensor, how many such tensors)


def lora_tensor_sizes(spec: Spec, rank: int, targets: tuple[str, ...]) -> TensorSizes:
    """The adapters' tensors: A (d_in, r) and B (r, d_out) per targeted linear matrix of every
    block, as (elements, count)."""
    unknown = [t for t in targets if t not in LORA_TARGETS]
    if unknown:
        raise BadInputError(not_one_of("--lora-targets", unknown[0], tuple(LORA_TARGETS)))
    paths = tuple(LORA_TARGETS[t] for t in targets)
    hits = [c for c in components(spec) if _is_block_matrix(c) and c.path.endswith(paths)]
    if not hits:
        raise BadInputError(f"--lora-rank: {spec.name} has no linear layers named "
                            f"{', '.join(targets)} to adapt (--lora-targets)")
    return [(rank * side, c.repeat) for c in hits for side in c.shape]


def lora_parameters(spec: Spec, rank: int, targets: tuple[str, ...]) -> tuple[int, int]:
    """(adapter parameters, adapter tensors): r x (d_in + d_out) values per targeted matrix."""
    sizes = lora_tensor_sizes(spec, rank, targets)
    return sum(n * k for n, k in sizes), sum(k for _, k in sizes)


def parameter_tensor_sizes(spec: Spec) -> TensorSizes:
    """The parameter tensors, as tfcli's arrays hold them (one per block): (elements, count),
    never expanded (a spec may claim 10^9 blocks)."""
    return [(c.per_instance, c.repeat) for c in components(spec) if c.per_instance]


def parameter_tensors(spec: Spec) -> int:
    """tfcli's parameter arrays (torch keeps one Adam `step` per parameter tensor)."""
    return sum(c.repeat for c in components(spec) if c.per_instance)


def elements_per_rank(sizes: TensorSizes, ways: int, per_tensor: bool) -> int:
    """Elements one of `ways` ranks holds of tensors of `sizes` elements: whole values, never a
    fraction of one. ZeRO-3 partitions every parameter tensor on its own (DeepSpeed's
    ds_tensor: ceil(numel / world) elements, the last rank padded); stages 1-2 and tensor
    parallelism split one flat buffer of them all (padded to a multiple of `ways`)."""
    if per_tensor:
        return sum(-(-n // ways) * k for n, k in sizes)
    return -(-sum(n * k for n, k in sizes) // ways)


def optimizer_bytes(optimizer: str, params: int, tensors: int) -> int:
    """Optimizer state for `params` trainable values in `tensors` tensors, as torch keeps it:
    Adam / AdamW exp_avg and exp_avg_sq (float32) and a float32 step per tensor; SGD one
    momentum buffer; 8-bit Adam two uint8 states and their float32 absmax per 256 values."""
    if optimizer in ("adam", "adamw"):
        return 2 * FLOAT32 * params + STEP_BYTES * tensors
    if optimizer == "sgd":
        return FLOAT32 * params
    blocks = 2 * -(-params // ADAM8_BLOCK)
    return 2 * params + FLOAT32 * blocks + STEP_BYTES * tensors


def _sharded(value: int, ways: int) -> int:
    return -(-value // ways)


def _saved(spec: Spec, o: MemoryOptions, work: Workload) -> SavedActivations:
    """What autograd keeps: with LoRA (no full recomputation) only what the adapters' gradients
    need (tfcli.analysis.memory.saved_lora), else as full fine-tuning saves it."""
    if o.lora_rank and o.recompute != "full":
        return lora_saved_activations(spec, work, o.attention, o.lora_targets, o.lora_rank)
    return saved_activations(spec, work, o.attention, o.recompute, o.tp, o.dropout,
                             frozenset(o.fused))


@dataclass(frozen=True)
class _Shards:
    """What one rank holds of the trainable tensors: each state sharded over --tp and, from its
    ZeRO stage on, over the data-parallel ranks (stage 1 optimizer state and master weights,
    2 + gradients, 3 + weights)."""

    sizes: TensorSizes  # the trainable tensors
    tp: int
    dp: int
    zero: int

    def ways(self, stage: int) -> int:
        return self.tp * (self.dp if self.zero >= stage else 1)

    def elements(self, stage: int) -> int:
        return elements_per_rank(self.sizes, self.ways(stage), self.zero >= 3)

    def tensors(self, stage: int) -> int:  # Adam's `step` tensors, one per parameter tensor
        return -(-sum(k for _, k in self.sizes) // self.ways(stage))


def check_zero_degree(trainable: int, dp: int, zero: int) -> None:
    """ZeRO over more data-parallel ranks than there are values to shard would leave ranks
    holding padding alone: refused, naming the two counts."""
    if zero and dp > trainable:
        raise BadInputError(f"--zero {zero} over {dp:,} data-parallel GPUs (--gpus / --tp): more "
                            f"ranks than the {trainable:,} trainable parameters it shards")


def _training_parts(spec: Spec, o: MemoryOptions, seq_len: int) -> list[MemoryPart]:
    it = _compute_itemsize(o.dtype)
    mixed = it < FLOAT32
    dp = o.gpus // o.tp
    lora_sizes = lora_tensor_sizes(spec, o.lora_rank, o.lora_targets) if o.lora_rank else []
    lora = sum(n * k for n, k in lora_sizes)
    sizes = lora_sizes or parameter_tensor_sizes(spec)
    trainable = sum(n * k for n, k in sizes)
    check_zero_degree(trainable, dp, o.zero)
    shards = _Shards(sizes, o.tp, dp, o.zero)
    tensors = shards.tensors(1)
    if o.param_tensors and not lora:  # torch's tensor count, when it differs from tfcli's
        tensors = -(-o.param_tensors // shards.ways(1))
    tp_ways = o.tp
    if lora:  # frozen base in its dtype, sharded as bytes; the adapters (and all about them) f32
        base_bytes = _sharded(weight_bytes(spec, o.dtype, o.group_size), shards.ways(3))
        weights = base_bytes + FLOAT32 * shards.elements(3)
        grads, master = FLOAT32 * shards.elements(2), 0
    else:
        weights, grads = it * shards.elements(3), it * shards.elements(2)
        master = FLOAT32 * shards.elements(1) if mixed else 0
    opt = optimizer_bytes(o.optimizer, shards.elements(1), tensors)
    saved = _saved(spec, o, Workload(o.batch, seq_len, it))
    tokens = o.batch * seq_len
    loss = tokens * spec.vocab_size * (it + FLOAT32) if spec.lm_head else 0
    parts = [
        MemoryPart("weights", weights,
                   f"{o.dtype}" + (f", frozen base + {lora:,} LoRA parameters (float32)"
                                   if lora else "")),
        MemoryPart("gradients", grads, "float32" if lora else o.dtype),
        MemoryPart("optimizer state", opt,
                   f"{o.optimizer}, {trainable:,} trainable parameters"),
        MemoryPart("master weights", master,
                   "float32 copy for mixed precision" if master else
                   "none: the adapters are float32" if lora else "none: the weights are float32"),
        MemoryPart("activations", saved.total,
                   f"kept for backward ({o.attention}, recompute {o.recompute}"
                   + ("; LoRA: what the adapters' gradients need)" if lora else ")")),
        MemoryPart("logits and loss", _sharded(loss, tp_ways),
                   "logits and their float32 gradient" if loss else "no vocabulary head"),
    ]
    if o.recompute == "full":
        parts.append(MemoryPart("recomputed block", saved.per_block,
                                "one block's saved set, rebuilt during backward"))
    step = step_scratch_bytes(o.optimizer, shards.elements(1))
    freed = sum(p.bytes for p in parts if p.name in FREED_BEFORE_STEP)
    parts.append(MemoryPart("optimizer step", max(0, step - freed),
                            f"foreach update scratch {step:,} B, less what backward freed"
                            if step else "updates in place"))
    return parts


FREED_BEFORE_STEP = ("activations", "logits and loss", "recomputed block")


def step_scratch_bytes(optimizer: str, params: int) -> int:
    """What the optimizer step allocates for itself: torch's foreach Adam / AdamW (the CUDA
    default) a float32 sqrt(exp_avg_sq) of every trainable value (measured: 4 bytes each);
    SGD and bitsandbytes' fused 8-bit kernel update in place."""
    return FLOAT32 * params if optimizer in ("adam", "adamw") else 0


def _notes(spec: Spec, o: MemoryOptions) -> tuple[str, ...]:
    notes = []
    if o.train:
        notes.append(f"per GPU: {o.gpus} GPU(s), tensor parallel {o.tp}, data parallel "
                     f"{o.gpus // o.tp}, ZeRO stage {o.zero}; --batch is each GPU's micro-batch")
        if o.tp > 1:
            notes.append("tensor parallelism (Megatron, no sequence parallelism): weights, "
                         "gradients, optimizer state, the heads' and hidden units' activations "
                         "and the vocabulary shared over --tp; norms and the linears' inputs "
                         "replicated")
        notes.append("dropout on: torch's saved noise counted (eager probabilities too); flash "
                     "sdpa keeps only its RNG state" if o.dropout else
                     "dropout taken as off (--dropout counts a model trained with it)")
        if o.lora_rank and o.tp > 1:
            notes.append("LoRA activations are not divided by --tp (a conservative figure)")
    else:
        notes.append("activations: the largest live set, not a sum of op outputs; buffers "
                     "freed when the code drops its last reference (docs/memory.md)")
    if not o.train and _cached_kv_heads(spec, o) != spec.kv_heads:
        notes.append(f"KV cache: transformers' Falcon (new_decoder_architecture) caches K/V "
                     f"repeated to all {spec.n_heads} query heads, not {spec.kv_heads}")
    if spec.latent_attention and not o.train:
        notes.append("KV cache: MLA's latent and shared RoPE key per layer-token, as tfcli's "
                     "engine and transformers 5 cache them")
    if spec.latent_attention and o.attention == "sdpa" and spec.head_dim != spec.value_dim:
        notes.append("MLA sdpa: q/k heads wider than v heads take torch's math path on CPU "
                     "(scores and probabilities materialised, in float32), as planned; CUDA's "
                     "memory-efficient kernel does not materialise them (not measured)")
    if spec.disentangled_attention and o.attention == "sdpa":
        notes.append("DeBERTa: transformers' DebertaV2 has only eager attention (asked for "
                     "sdpa it keeps eager): planned as eager")
    if spec.attn_logit_softcap is not None and o.attention == "sdpa":
        notes.append("attention logit soft-capping (Gemma 2): transformers' Gemma 2 has no sdpa "
                     "(from_pretrained picks eager): planned as eager")
    return tuple(notes)


def build_memory_plan(spec: Spec, options: MemoryOptions) -> MemoryPlan:
    """The memory breakdown of `spec` at one (batch, seq_len) point."""
    check_options(spec, options)
    seq_len = options.resolved_seq_len(spec)
    if options.train:
        parts = _training_parts(spec, options, seq_len)
    else:
        parts = _inference_parts(spec, options, seq_len)
    return MemoryPlan(spec.name, "training" if options.train else "inference", options.batch,
                      seq_len, replace(options, seq_len=seq_len), tuple(parts),
                      _notes(spec, options))

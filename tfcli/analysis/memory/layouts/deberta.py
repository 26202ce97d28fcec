"""transformers' DebertaV2 modules (DeBERTa-v2/v3, spec.disentangled_attention) as the memory
planner's layout `deberta`: the inference live set and the bytes autograd saves for backward
(the engine's live set of the same attention: layouts/engine.py; the sizes both share:
disentangled.py).

Besides the scores, transformers holds through the whole forward what BERT does not: the
(B, 1, T, T) float32 mask (ones(B, T) outer itself), the (T, T) int64 relative positions, the normed table, and
every layer's output (DebertaV2Encoder always collects all hidden states).

transformers' DebertaV2 has only eager attention: it is not written against the attention
interface, so set_attn_implementation("sdpa") warns and keeps eager. "sdpa" is therefore
planned as eager, which is what transformers runs when asked for it (memory_plan notes it).

Sizes are in elements of the compute dtype unless a name says bytes; int64 indices and the
float32 mask are converted (`elements`). Measured on DebertaV2Model (tests/parity/
tests/parity/memory_families.py).
"""

from __future__ import annotations

from tfcli.analysis.memory.base import (FLOAT32, HF_ACTIVATION_TENSORS, SAVED_BY_ACTIVATION, Phase,
                                        SavedActivations, Workload, activation)
from tfcli.analysis.memory.disentangled import (INDEX, against_all, elements, relative_positions,
                                                rows, score, terms)
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

# transformers' make_log_bucket_position on the (T, T) offsets, at its widest (the final
# torch.where): the int64 offsets, sign and abs, the float32 log positions, the bool test,
# the float32 copy of the offsets, their product with the sign and the result: 41 bytes per
# entry (counted op by op, equal to the measured live set)
HF_BUCKET_BYTES = 41


def check_transformers_layout(spec: Spec) -> None:
    """transformers' DebertaV2Layer is post-LayerNorm with separate q/k/v projections; a spec
    outside that layout has no transformers module to plan."""
    if spec.norm_placement != "post" or spec.norm != "layernorm":
        raise BadInputError(f"{spec.name}: activation memory of disentangled attention is "
                            "modelled for transformers' DebertaV2 layout (post-norm LayerNorm); "
                            f"this spec has norm {spec.norm}, norm_placement "
                            f"{spec.norm_placement}: use --attention engine")


# --- transformers (eager) -------------------------------------------------------------------


def _hf_held(spec: Spec, work: Workload, hidden_states: int) -> float:
    """What a DebertaV2Model forward holds throughout: ones(B, T) float32 and the int64 token
    types (DebertaV2Model.forward), the (B, 1, T, T) float32 mask and the (T, T) int64
    relative positions (DebertaV2Encoder), the normed table, and `hidden_states` (B, T, d)
    layer outputs (the embedding's included: all_hidden_states)."""
    n, t = work.tokens, work.seq_len
    fixed = FLOAT32 * n + INDEX * n + FLOAT32 * work.batch * t * t + INDEX * t * t
    table = rows(spec) * spec.d_model if spec.relative_embedding_norm else 0
    return elements(fixed, work) + table + hidden_states * n * spec.d_model


def _hf_bias(spec: Spec, work: Workload) -> float:
    """disentangled_attention_bias at its widest, the content scores included. One term: at
    its gather (the (B, H, T, R) product and its gathered copy) or at score = 0 + c2p / scale
    (gathered, divided, sum). Two: the second beside the first's gathered copy and the sum,
    at its gather or its division. Also alive: the projected table per head (repeated to
    B x H; both projections under share_att_key) and one (T, T) int64 index per term."""
    g, raw = score(spec, work), against_all(spec, work)
    used = terms(spec)
    if len(used) == 2:
        scores = 3 * g + g + max(raw, g)  # content, c2p, sum; p2c gathered + product | divided
    else:
        scores = g + max(raw + g, 3 * g)  # content; product + gathered | gathered, divided, sum
    projections = 2 if spec.share_att_key else len(used)
    projected = projections * work.batch * rows(spec) * spec.d_model
    index = elements(len(used) * INDEX * work.seq_len ** 2, work)
    return scores + projected + index


def hf_phases(spec: Spec, work: Workload) -> list[Phase]:
    """Live elements per phase of DebertaV2Model's forward (no_grad), at its last layer (every
    earlier layer's output is still held): the relative positions, the position scores
    (_hf_bias), the masked fill and softmax (the position bias, the masked scores, the bool
    mask and its negation, the probabilities), the attention's output LayerNorm (context,
    dense output, residual sum, norm output, float32 statistics), the FFN and its output
    LayerNorm."""
    check_transformers_layout(spec)
    n, d, f, t = work.tokens, spec.d_model, spec.d_ff, work.seq_len
    stats = elements(2 * FLOAT32 * n, work)
    held = _hf_held(spec, work, spec.n_layers)  # the last layer's input is its predecessor's
    qkv = 3 * n * d
    g = score(spec, work)
    bool_mask = elements(work.batch * t * t, work)
    act = HF_ACTIVATION_TENSORS[activation(spec)]
    # built before the table is normed: the masks, token types, the embedding output, and the
    # two int64 aranges of the offsets
    early = FLOAT32 * n + INDEX * n + FLOAT32 * work.batch * t * t + 2 * INDEX * t
    positions = elements(early + relative_positions(spec, work, HF_BUCKET_BYTES), work)
    return [
        ("relative positions", positions + n * d),
        ("attention position scores", held + qkv + _hf_bias(spec, work)),
        ("attention softmax", held + qkv + 3 * g + 2 * bool_mask),
        ("attention output norm", held + 4 * n * d + stats),
        ("FFN", held + n * d + act * n * f),
        ("FFN output norm", held + n * d + n * f + 3 * n * d + stats),
    ]


# --- training: what autograd saves ----------------------------------------------------------


def _dropout_saved(spec: Spec, work: Workload, selective: bool) -> float:
    """A layer's live dropouts (p > 0): torch's dropout saves its noise, after the attention's
    and the FFN's output projections (it·N·d each), on the probabilities (the noise and the
    dropped copy the bmm saves, 2 it·B·H·T·T) and on the relative table (pos_dropout, per
    layer: its noise and the dropped copy the projections save, 2 it·R·d)."""
    it, g = work.itemsize, score(spec, work)
    probs = 0 if selective else 2 * g
    return it * (2 * work.tokens * spec.d_model + probs + 2 * rows(spec) * spec.d_model)


def _block_saved(spec: Spec, work: Workload, selective: bool, tp: int) -> float:
    """One DebertaV2Layer's saved bytes: the layer input (the q/k/v projections' input), k/scale
    and q (the content bmm), v (the probabilities' bmm), k again for p2c's bmm; per term the
    projected table repeated over B x H, its (T, T) int64 index and the (B, H, T, R) product
    (torch.gather saves its input); the bool mask masked_fill saves, the probabilities; the
    output projection's input, both LayerNorms' inputs and float32 statistics, the FFN's input
    and its activation's tensors. Heads and hidden units shard over tp; the norms, the
    linears' inputs, the masks and indices are replicated."""
    n, d, it, t = work.tokens, spec.d_model, work.itemsize, work.seq_len
    used = terms(spec)
    heads = (3 + (1 if "p2c" in used else 0)) * n * d  # k/scale, q, v (, k)
    per_term = work.batch * rows(spec) * d + against_all(spec, work)
    sharded = it * (heads + len(used) * per_term + (0 if selective else score(spec, work))
                    + n * d + SAVED_BY_ACTIVATION[activation(spec)] * n * spec.d_ff)
    # the layer input, both LayerNorms' inputs, the attention output (the FFN's input), the
    # norms' statistics, the indices and the bool mask
    replicated = (4 * it * n * d + 2 * 2 * FLOAT32 * n + len(used) * INDEX * t * t
                  + work.batch * t * t)
    return sharded / tp + replicated


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int = 1,
          dropout: bool = False, fused: frozenset[str] = frozenset()) -> SavedActivations:
    """What autograd saves in a DebertaV2Model forward. Outside the blocks: the embedding
    LayerNorm, the (B, T) mask the embedding output is multiplied by, the relative table's
    LayerNorm statistics and its normed output (the projections' input, saved once; not under
    gradient checkpointing, which takes the table as a keyword argument). Full recompute keeps
    each layer's positional inputs: its hidden states and the (B, 1, T, T) float32 mask (one
    storage for all layers). Dropout (p > 0): _dropout_saved per layer and the embeddings'
    noise."""
    check_transformers_layout(spec)
    if spec.lm_head or spec.pooler or spec.head not in (None, "none"):
        raise BadInputError(f"{spec.name}: training activations of DeBERTa's heads are not "
                            "modelled yet (the DebertaV2Model body is)")
    n, d, it = work.tokens, spec.d_model, work.itemsize
    block = _block_saved(spec, work, recompute == "selective", tp)
    block += _dropout_saved(spec, work, recompute == "selective") if dropout else 0
    full = recompute == "full"
    blocks = spec.n_layers * (it * n * d if full else block)
    parts = [(f"blocks (× {spec.n_layers})", blocks)]
    if full:
        parts.append(("attention mask", FLOAT32 * work.batch * work.seq_len ** 2))
    if spec.embedding_norm:
        parts.append(("embedding norm", it * n * d + 2 * FLOAT32 * n))
    if dropout:  # the embeddings' dropout noise
        parts.append(("embedding dropout", it * n * d))
    parts.append(("embedding mask", it * n))
    if spec.type_vocab_size:  # the token-type embedding's backward keeps its int64 ids
        parts.append(("token type ids", INDEX * n))
    if spec.relative_embedding_norm:
        # the normed table is saved once, unless each layer's pos_dropout copy is saved instead
        table = rows(spec) * (2 * FLOAT32 + (0 if full or dropout else it * d))
        parts.append(("relative table", table))
    return SavedActivations(tuple((name, int(round(b))) for name, b in parts), int(round(block)))


def live(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> list[Phase]:
    """DebertaV2 has eager attention only: asked for sdpa, transformers runs eager."""
    return hf_phases(spec, work)

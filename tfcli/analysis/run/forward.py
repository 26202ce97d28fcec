"""`tfcli run`: one real forward pass — inputs, hidden-state norms, logits, loss, timing."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfcli.analysis.allocation import MemoryEstimate, Workload, run_estimate
from tfcli.analysis.run.finite import check_outputs, quiet_numerics
from tfcli.analysis.model_source import Model
from tfcli.analysis.run.scores import HeadScores, head_scores
from tfcli.core.arrays import Array
from tfcli.engine.generate import right_pad
from tfcli.engine.model import ForwardOutput, ModelInput, forward
from tfcli.engine.pooling import Pooling, cosine_matrix, l2_normalize, pool
from tfcli.core.errors import BadInputError
from tfcli.core.files import check_output_file, write_atomically
from tfcli.spec.model import Spec
from tfcli.checkpoints.tokenizer import Tokenizer, fit_length, get_tokenizer, parse_token_list

MLM_FRACTION = 0.15  # BERT's masking rate
LOSS_CHUNK_ELEMENTS = 1 << 22  # logits per float64 chunk of the loss (32 MB a copy)


@dataclass(frozen=True)
class RunInputs:
    tokens: Array  # (B, T) source / input ids
    decoder_tokens: Array | None  # (B, T') encoder-decoder target ids
    kind: str  # "text", "tokens" or "random"
    tokenizer: Tokenizer | None
    notes: tuple[str, ...] = ()  # e.g. what --truncate cut
    mask: Array | None = None  # (B, T) bool, True = real token: several texts, right-padded


@dataclass(frozen=True)
class TopToken:
    token: int
    text: str
    prob: float


@dataclass(frozen=True)
class SentenceEmbedding:
    """One pooled vector per sequence (tfcli.engine.pooling) and how it was made."""

    pooling: str  # "mean", "cls" or "last"
    normalized: bool
    vectors: list[list[float]]  # (B, d)
    norms: list[float]  # (B,) each vector's L2 norm (1 when normalised)
    similarity: list[list[float]] | None  # (B, B) cosines, with two or more sequences

    @property
    def method(self) -> str:
        what = {"mean": "mean over the real tokens", "cls": "the first token",
                "last": "the last real token"}[self.pooling]
        return what + (", L2-normalised" if self.normalized else "")

    def to_dict(self) -> dict[str, Any]:
        return {"pooling": self.pooling, "normalized": self.normalized, "method": self.method,
                "dim": len(self.vectors[0]), "vectors": self.vectors, "norms": self.norms,
                "similarity": self.similarity}


@dataclass(frozen=True)
class RunResult:
    spec_name: str
    family: str
    origin: str
    dtype: str
    input_kind: str
    tokens: list[list[int]]
    decoder_tokens: list[list[int]] | None
    hidden_norms: list[list[float]]  # per sequence, per position (last stack's output)
    encoder_norms: list[list[float]] | None
    logits_shape: list[int] | None
    logits_stats: dict[str, float] | None  # mean, std, min, max
    top_next: list[list[TopToken]] | None  # per sequence: top-5 after the last position
    loss: float | None
    loss_kind: str | None
    seconds: float
    flops: int
    notes: list[str] = field(default_factory=list)
    embedding: SentenceEmbedding | None = None
    scores: HeadScores | None = None  # a classification head's (tfcli.analysis.run.scores)

    @property
    def gflops_per_s(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec_name, "family": self.family, "weights": self.origin,
            "dtype": self.dtype, "input": self.input_kind, "tokens": self.tokens,
            "decoder_tokens": self.decoder_tokens, "hidden_norms": self.hidden_norms,
            "encoder_norms": self.encoder_norms, "logits_shape": self.logits_shape,
            "logits_stats": self.logits_stats,
            "top_next": [[t.__dict__ for t in seq] for seq in self.top_next] if self.top_next else None,
            "loss": self.loss, "loss_kind": self.loss_kind, "seconds": self.seconds,
            "flops": self.flops, "gflops_per_s": self.gflops_per_s, "notes": self.notes,
            "embedding": None if self.embedding is None else self.embedding.to_dict(),
            "scores": None if self.scores is None else self.scores.to_dict(),
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        rows: list[list[object]] = []
        for b, norms in enumerate(self.hidden_norms):
            ids = (self.decoder_tokens or self.tokens or [[]] * len(self.hidden_norms))[b]
            rows += [[b, t, ids[t] if t < len(ids) else "", f"{n:.6g}"]  # embeddings: no token
                     for t, n in enumerate(norms)]
        return ["sequence", "position", "token", "hidden_norm"], rows


def build_inputs(spec: Spec, *, text: str | Sequence[str] | None, tokens: str | None,
                 target: str | None, batch: int, seq_len: int | None, seed: int,
                 weights_dir: str | None, truncate: bool = False) -> RunInputs:
    """Token ids from --text (repeatable), --tokens, or seeded random ids (--batch x --seq-len).
    Each text is encoded alone; several are right-padded into one batch with a mask, so that
    no text sees another's padding. A text longer than the model takes is refused unless
    `truncate`, which cuts it and adds a note."""
    texts = _texts(text)
    if texts is not None and len(texts) > 1 and target is not None:
        raise BadInputError("--target goes with one --text (one source sequence), got "
                            f"{len(texts)} texts")
    if text is not None and tokens is not None:
        raise BadInputError("give either --text or --tokens, not both")
    if truncate and text is None and target is None:
        raise BadInputError("--truncate cuts --text or --target; it does not apply to --tokens "
                            "or random input")
    if target is not None and spec.family != "encoder-decoder":
        raise BadInputError("--target is only for encoder-decoder specs (it is the decoder input)")
    if (text is not None or tokens is not None) and (batch != 1 or seq_len is not None):
        raise BadInputError("--batch and --seq-len shape random input; they do not apply to "
                            "--text or --tokens")
    tokenizer: Tokenizer | None = None
    if text is not None or target is not None:
        tokenizer = get_tokenizer(spec.vocab_size, weights_dir,
                                  "--text" if text is not None else "--target")
    notes: list[str] = []
    if texts is not None and tokenizer is not None:
        rows = [_encode(spec, tokenizer, t, _nth("--text", i, len(texts)), truncate, notes)
                for i, t in enumerate(texts, start=1)]
        if len(rows) > 1:
            padded, mask = right_pad([np.array(r, dtype=np.int64) for r in rows])
            return RunInputs(padded, _decoder_start(spec, len(rows)), "text", tokenizer,
                             tuple(notes), mask)
        ids, kind = rows[0], "text"
    elif tokens is not None:
        ids, kind = parse_token_list(tokens, spec.vocab_size), "tokens"
    else:
        length = seq_len or min(spec.max_seq_len, 16)
        _check_random_length(spec, length)  # before drawing batch x length ids
        rng = np.random.default_rng(seed)
        return RunInputs(rng.integers(0, spec.vocab_size, (batch, length)),
                         _random_target(spec, rng, batch, length), "random", None)
    decoder = None
    if target is not None and tokenizer is not None:
        decoder = np.array([_encode(spec, tokenizer, target, "--target", truncate, notes)])  # (1, T)
    else:
        decoder = _decoder_start(spec, 1)
    return RunInputs(np.array([ids]), decoder, kind, tokenizer, tuple(notes))


def _texts(text: str | Sequence[str] | None) -> list[str] | None:
    """--text as a list (typer gives a list for a repeatable option; library callers a str)."""
    if text is None or isinstance(text, str):
        return None if text is None else [text]
    return list(text) or None


def _decoder_start(spec: Spec, batch: int) -> Array | None:
    """An encoder-decoder's decoder input without --target: its start token alone."""
    if spec.family != "encoder-decoder":
        return None
    return np.full((batch, 1), spec.decoder_start_token_id, dtype=np.int64)


def _check_random_length(spec: Spec, length: int) -> None:
    if length > spec.max_seq_len:
        raise BadInputError(f"--seq-len {length:,} exceeds max_seq_len {spec.max_seq_len:,} "
                            f"of {spec.name}")


def _longest_encoding(spec: Spec, text: str) -> int:
    """An upper bound on a text's tokens before tokenizing: every BPE / WordPiece / Unigram
    token covers at least one UTF-8 byte (at most 4 per character), plus a few specials."""
    return min(spec.max_seq_len, 4 * len(text) + 8)


def run_plan(spec: Spec, dtype: type, *, text: str | Sequence[str] | None, tokens: str | None,
             target: str | None, batch: int, seq_len: int | None) -> MemoryEstimate:
    """The sizes `tfcli run` will use, checked against the spec, and the run's whole memory
    estimate; load_model calls it before any weight or input exists."""
    if text is None and tokens is None:
        length = seq_len or min(spec.max_seq_len, 16)
        _check_random_length(spec, length)
        work = Workload(batch=batch, seq_len=length, decoder_len=length, loss=True)
    else:
        texts = _texts(text)
        length = max(_longest_encoding(spec, t) for t in texts) if texts is not None else \
            min(spec.max_seq_len, (tokens or "").count(",") + 1)
        decoder = 1 if target is None else _longest_encoding(spec, target)
        work = Workload(batch=len(texts or [""]), seq_len=length, decoder_len=decoder, loss=True)
    return run_estimate(spec, dtype, work)


def _nth(option: str, index: int, count: int) -> str:
    """Which text of a batch a message is about: '--text' alone, else '--text 2 of 3'."""
    return option if count == 1 else f"{option} {index} of {count}"


def _encode(spec: Spec, tokenizer: Tokenizer, text: str, option: str, truncate: bool,
            notes: list[str]) -> list[int]:
    """One text's ids within max_seq_len; a --truncate cut is recorded in `notes`."""
    encoded = fit_length(tokenizer, text, option, spec.max_seq_len, truncate=truncate,
                         model_why=f"max_seq_len of {spec.name} is {spec.max_seq_len:,}")
    if not encoded.ids:
        raise BadInputError(f"{option} is empty: nothing to run")
    if encoded.note:
        notes.append(encoded.note)
    return encoded.ids


def _random_target(spec: Spec, rng: np.random.Generator, batch: int, length: int) -> Array | None:
    if spec.family != "encoder-decoder":
        return None
    return rng.integers(0, spec.vocab_size, (batch, length))


def _check_length(spec: Spec, inputs: RunInputs) -> None:
    longest = max(inputs.tokens.shape[1],
                  0 if inputs.decoder_tokens is None else inputs.decoder_tokens.shape[1])
    if longest > spec.max_seq_len:
        raise BadInputError(f"input of {longest} tokens exceeds max_seq_len {spec.max_seq_len} "
                            f"of {spec.name}")


def _mlm_masked(spec: Spec, tokens: Array, seed: int,
                mask: Array | None = None) -> tuple[Array, Array]:
    """BERT-style: 15% of the real positions (at least one per sequence) replaced by a mask id."""
    rng = np.random.default_rng(seed + 1)
    chosen = rng.random(tokens.shape) < MLM_FRACTION  # (B, T)
    if mask is None:
        forced = rng.integers(0, tokens.shape[1], tokens.shape[0])  # (B,)
    else:  # a real position of each row
        forced = rng.integers(0, mask.sum(axis=1))  # (B,) each below its row's length
        chosen &= mask
    chosen[np.arange(tokens.shape[0]), forced] = True
    masked = np.where(chosen, spec.vocab_size - 1, tokens)  # the last id stands in for [MASK]
    return masked, chosen


def cross_entropy(logits: Array, targets: Array, where: Array | None = None) -> float:
    """Mean -log softmax(logits)[target] over the positions in `where` (all when None).

    In float64 to avoid cancellation, but a few rows at a time: a float64 copy of all the
    logits of --batch 64 --seq-len 1024 on GPT-2 would be 26 GB (three such copies at once)."""
    vocab = logits.shape[-1]
    seqs = logits.reshape(-1, *logits.shape[-2:])  # (S, T, V); a view for (B, T, V) slices
    wanted = np.ones(targets.shape, bool) if where is None else np.broadcast_to(where, targets.shape)
    ids, keep = targets.reshape(seqs.shape[:2]), wanted.reshape(seqs.shape[:2])  # (S, T)
    rows = max(1, LOSS_CHUNK_ELEMENTS // vocab)
    total, count = 0.0, 0
    for s in range(seqs.shape[0]):
        for t0 in range(0, seqs.shape[1], rows):
            chosen = keep[s, t0:t0 + rows]
            if chosen.any():
                total += _neg_log_likelihood(seqs[s, t0:t0 + rows][chosen], ids[s, t0:t0 + rows][chosen])
                count += int(chosen.sum())
    return total / count if count else float("nan")


def _shifted_exp(logits: Array) -> tuple[Array, Array]:
    """(x - max x, exp(x - max x)) per row, in float64: the two halves of a stable softmax,
    kept apart so the loss takes the log of the sum without a log of each probability."""
    logits64 = logits.astype(np.float64)  # (n, V)
    shifted = logits64 - logits64.max(axis=-1, keepdims=True)
    return shifted, np.exp(shifted)


def _neg_log_likelihood(logits: Array, targets: Array) -> float:
    """Sum over rows of -log softmax(logits)[target]: logits (n, V), targets (n,)."""
    shifted, exp = _shifted_exp(logits)  # (n, V) each
    log_norm = np.log(exp.sum(axis=-1))  # (n,)
    picked = shifted[np.arange(len(targets)), targets]  # (n,)
    return float((log_norm - picked).sum())


def _loss(spec: Spec, model: Model, inputs: RunInputs, out: ForwardOutput,
          seed: int) -> tuple[float | None, str | None]:
    if out.logits is None:
        return None, None
    if spec.family == "encoder":
        masked, chosen = _mlm_masked(spec, inputs.tokens, seed, inputs.mask)
        mlm = forward(spec, model.weights, ModelInput(masked, inputs.mask))
        if mlm.logits is None:
            return None, None
        return cross_entropy(mlm.logits, inputs.tokens, chosen), "masked-LM cross-entropy (15% masked)"
    targets = inputs.decoder_tokens if spec.family == "encoder-decoder" else inputs.tokens
    if targets is None or targets.shape[1] < 2:
        return None, None
    # Teacher forcing: position t predicts token t + 1 (real tokens only, with padding).
    where = None if inputs.mask is None or spec.family == "encoder-decoder" else inputs.mask[:, 1:]
    return cross_entropy(out.logits[:, :-1], targets[:, 1:], where), "next-token cross-entropy"


def _top_next(logits: Array, tokenizer: Tokenizer | None, mask: Array | None = None,
              k: int = 5) -> list[list[TopToken]]:
    last = np.full(logits.shape[0], logits.shape[1] - 1) if mask is None else mask.sum(axis=1) - 1
    _, probs = _shifted_exp(logits[np.arange(logits.shape[0]), last])  # (B, V): last real token
    probs /= probs.sum(axis=-1, keepdims=True)
    top = np.argsort(-probs, axis=-1)[:, :k]  # (B, k)
    return [[TopToken(int(t), tokenizer.token_text(int(t)) if tokenizer else str(int(t)),
                      float(p[t])) for t in row] for row, p in zip(top, probs)]


def _norms(hidden: Array, mask: Array | None = None) -> list[list[float]]:
    """Per sequence, the norm of each real position's hidden state (padding left out)."""
    norms = np.linalg.norm(hidden.astype(np.float64), axis=-1)  # (B, T)
    if mask is None:
        return norms.tolist()
    return [row[keep].tolist() for row, keep in zip(norms, np.asarray(mask, dtype=bool))]


def sentence_embedding(spec: Spec, inputs: RunInputs, out: ForwardOutput, pooling: Pooling | None,
                       normalize: bool) -> SentenceEmbedding | None:
    """The pooled vectors of the run: of the encoder's output for encoder-decoders, of the
    last stack's otherwise; None when `pooling` is None."""
    if pooling is None:
        return None
    hidden = out.encoder_hidden if out.encoder_hidden is not None else out.hidden
    vectors = pool(hidden, inputs.mask, pooling)  # (B, d)
    if normalize:
        vectors = l2_normalize(vectors)
    similarity = cosine_matrix(vectors).tolist() if len(vectors) > 1 else None
    norms = np.linalg.norm(vectors, axis=-1).tolist()
    return SentenceEmbedding(pooling, normalize, vectors.tolist(), norms, similarity)


def default_pooling(spec: Spec, pool_option: str | None) -> Pooling | None:
    """--pool as given ("none": no embedding); unset, the mean for encoders (as
    sentence-transformers), none for other families."""
    if pool_option is None:
        return "mean" if spec.family == "encoder" else None
    return None if pool_option == "none" else pool_option  # type: ignore[return-value]


def _flops(spec: Spec, inputs: RunInputs) -> int:
    from tfcli.analysis.trace.build import build_trace

    batch, length = inputs.tokens.shape
    tgt = inputs.decoder_tokens.shape[1] if inputs.decoder_tokens is not None else 1
    if spec.family == "encoder-decoder":
        return build_trace(spec, batch=batch, src_len=length, tgt_len=tgt).total_flops
    return build_trace(spec, batch=batch, seq_len=length).total_flops


def run_forward(model: Model, inputs: RunInputs, *, seed: int = 0, pooling: Pooling | None = None,
                normalize: bool = False) -> tuple[RunResult, ForwardOutput]:
    """Time one forward pass and summarise it (with a sentence embedding when `pooling`)."""
    spec = model.spec
    _check_length(spec, inputs)
    start = time.perf_counter()
    with quiet_numerics():  # NaN / inf are reported by check_outputs, not as NumPy warnings
        out = forward(spec, model.weights,
                      ModelInput(inputs.tokens, inputs.mask, decoder_tokens=inputs.decoder_tokens))
        seconds = time.perf_counter() - start
        loss, loss_kind = _loss(spec, model, inputs, out, seed)
    check_outputs(model, out, inputs.tokens, inputs.decoder_tokens, loss)
    logits = out.logits
    result = RunResult(
        spec_name=spec.name, family=spec.family, origin=model.origin, dtype=model.dtype,
        input_kind=inputs.kind, tokens=inputs.tokens.tolist(),
        decoder_tokens=None if inputs.decoder_tokens is None else inputs.decoder_tokens.tolist(),
        hidden_norms=_norms(out.hidden, None if spec.family == "encoder-decoder" else inputs.mask),
        encoder_norms=None if out.encoder_hidden is None else _norms(out.encoder_hidden, inputs.mask),
        logits_shape=None if logits is None else list(logits.shape),
        logits_stats=None if logits is None else {
            "mean": float(logits.mean(dtype=np.float64)), "std": float(logits.std(dtype=np.float64)),
            "min": float(logits.min()), "max": float(logits.max())},
        top_next=None if logits is None or spec.family == "encoder" else _top_next(
            logits, inputs.tokenizer, None if spec.family == "encoder-decoder" else inputs.mask),
        loss=loss, loss_kind=loss_kind, seconds=seconds, flops=_flops(spec, inputs),
        notes=list(inputs.notes) + _body_only_notes(spec),
        embedding=sentence_embedding(spec, inputs, out, pooling, normalize),
        scores=head_scores(spec, out, inputs.mask),
    )
    return result, out


def _body_only_notes(spec: Spec) -> list[str]:
    """A checkpoint whose task head tfcli does not build runs as its body: say so, so hidden
    states are not mistaken for the model's real outputs (classification scores, say)."""
    if not spec.body_only:
        return []
    return [f"body only: {spec.body_only}; the outputs shown are the body's"]


def check_npz_path(path: str) -> Path:
    """The --save-npz target, refused before any work unless it is a new path or a regular file
    in a writable folder (never a symlink, FIFO or device, which the rename would replace)."""
    return check_output_file(path, "--save-npz")


def save_npz(path: str, inputs: RunInputs, out: ForwardOutput,
             embedding: SentenceEmbedding | None = None) -> None:
    """Write the outputs atomically (a temp file in the same folder, then a rename); a failed
    write (disk full) leaves nothing behind and is reported as bad input."""
    arrays = {"tokens": inputs.tokens, "hidden": out.hidden}
    optional = {"decoder_tokens": inputs.decoder_tokens, "logits": out.logits,
                "encoder_hidden": out.encoder_hidden, "pooled": out.pooled, "scores": out.scores}
    arrays |= {k: v for k, v in optional.items() if v is not None}
    if inputs.mask is not None:
        arrays["attention_mask"] = inputs.mask
    if embedding is not None:
        arrays["embedding"] = np.array(embedding.vectors)  # (B, d) float64
    write_atomically(path, "--save-npz", lambda handle: np.savez(handle, **arrays))


# --- a learner's embeddings (--inputs FILE.npz holding `embeddings`) ------------------------------


def _stack_flops(spec: Spec, batch: int, length: int) -> int:
    """The trace's FLOPs of the blocks and heads alone: what a run from embeddings computes."""
    from tfcli.analysis.trace.build import build_trace

    rows = build_trace(spec, batch=batch, seq_len=length).rows
    return sum(r.flops for r in rows if r.path != "embed")


def run_embeddings(model: Model, embeddings: Array, notes: Sequence[str] = ()) -> RunResult:
    """One forward pass from the first block's input (B, N, d_model), as the lessons feed X
    straight into the blocks: hidden-state norms per position, logits, timing; no tokens, so
    no loss."""
    from tfcli.engine.model import forward_embeddings

    spec = model.spec
    start = time.perf_counter()
    with quiet_numerics():
        out = forward_embeddings(spec, model.weights, embeddings)
    seconds = time.perf_counter() - start
    if not all(np.isfinite(a).all() for a in (out.hidden, out.logits) if a is not None):
        raise BadInputError(f"the forward pass of {spec.name} from the given embeddings is not "
                            f"finite in {model.dtype}: try --dtype float64")
    logits = out.logits
    batch, length = embeddings.shape[:2]
    return RunResult(
        spec_name=spec.name, family=spec.family, origin=model.origin, dtype=model.dtype,
        input_kind="embeddings", tokens=[], decoder_tokens=None,
        hidden_norms=_norms(out.hidden), encoder_norms=None,
        logits_shape=None if logits is None else list(logits.shape),
        logits_stats=None if logits is None else {
            "mean": float(logits.mean(dtype=np.float64)), "std": float(logits.std(dtype=np.float64)),
            "min": float(logits.min()), "max": float(logits.max())},
        top_next=None if logits is None or spec.family == "encoder" else _top_next(logits, None),
        loss=None, loss_kind=None, seconds=seconds, flops=_stack_flops(spec, batch, length),
        notes=[*notes, f"input: embeddings {tuple(embeddings.shape)} fed to block 0 (no "
                       "embedding layer, no loss: there are no tokens)"],
        scores=head_scores(spec, out, None),
    )

"""Rich rendering of `tfcli run`."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType

from tfcli.analysis.run.forward import RunResult, SentenceEmbedding
from tfcli.analysis.run.scores import HeadScores
from tfcli.render.safe import plain
from tfcli.render.tables import FitTable
from tfcli.render.units import human_flops

MAX_SHOWN = 24  # positions shown per sequence before eliding the middle
MAX_SEQUENCES = 16  # sequences (table rows) shown; a --batch of 100,000 took minutes to lay out


def _shown_sequences(n: int) -> tuple[range, str | None]:
    """The sequences a table lists, and the row that says how many it leaves to JSON / CSV."""
    if n <= MAX_SEQUENCES:
        return range(n), None
    return range(MAX_SEQUENCES), f"… {n - MAX_SEQUENCES:,} more sequences (--format json has all)"


def _norm_list(norms: list[float]) -> str:
    shown = [f"{n:.4g}" for n in norms]
    if len(shown) > MAX_SHOWN:
        shown = shown[:16] + [f"… {len(shown) - 24} more …"] + shown[-8:]
    return "[" + ", ".join(shown) + "]"


def norm_summary(norms: list[list[float]]) -> str:
    """Output norms in one cell: after a final norm with unit weights every position reads
    sqrt(d_model) (27.71 for gpt2), so a list of them says nothing; the range says the same
    when they are equal, and shows the spread when a checkpoint's norm weights make one."""
    values = [f"{n:.4g}" for row in norms for n in row]
    if not values:
        return "none"
    low, high = min(n for row in norms for n in row), max(n for row in norms for n in row)
    where = "every position" if len(set(values)) == 1 else f"{len(values):,} positions"
    spread = f"{low:.4g}" if f"{low:.4g}" == f"{high:.4g}" else f"{low:.4g} to {high:.4g}"
    return f"{spread} at {where} (per position: --format json)"


def _top_table(result: RunResult) -> FitTable:
    table = FitTable(title="top-5 next tokens (after the last position)")
    table.add_column("seq", justify="right", number=True)
    for rank in range(1, 6):
        table.add_column(f"#{rank}", drop=rank - 1 if rank > 1 else None)  # #5 leaves first
    top_next = result.top_next or []
    shown, more = _shown_sequences(len(top_next))
    for b in shown:
        # 3 significant digits: a random model's probabilities are ~1/vocab, 0.000 at 3 decimals
        # repr() shows a token's spaces and quotes; FitTable never reads it as markup ("[/INST]")
        table.add_row(str(b), *[_top_cell(t) for t in top_next[b]])
    if more:
        table.add_row("", more, "", "", "", "")
    return table


def _top_cell(token: Any) -> str:
    """`1042 ' the' p=0.000193`: the id once, then its text when a tokenizer gave one (an id
    without text reads '1042' or '<1042>' there: nothing more to show)."""
    text = "" if token.text in (str(token.token), f"<{token.token}>") else f" {token.text!r}"
    return f"{token.token}{text} p={token.prob:.3g}"


def _fixed(value: float, digits: int) -> str:
    """Fixed-point for ordinary magnitudes; scientific past a million, where fixed point would
    print dozens of digits (logits of an overflowing random model reach 1e11)."""
    return f"{value:.{digits}f}" if abs(value) < 1e6 else f"{value:.{digits}e}"


def _input_text(result: RunResult) -> str:
    """What went in: tokens (batch x length, and the target's), or embeddings fed to block 0
    (no tokens: their batch x length is the hidden states')."""
    if result.input_kind == "embeddings":
        rows = result.hidden_norms
        return f"embeddings: batch {len(rows)} × {len(rows[0])} positions, into block 0"
    text = f"{result.input_kind}: batch {len(result.tokens)} × {len(result.tokens[0])} tokens"
    target = result.decoder_tokens
    return text + (f", target {len(target[0])} tokens" if target else "")


def _summary(result: RunResult) -> FitTable:
    table = FitTable(show_header=False, title="forward pass")
    table.add_column("what")
    table.add_column("value")
    table.add_row("spec", f"{result.spec_name} ({result.family})")
    table.add_row("weights", result.origin)
    table.add_row("input", _input_text(result))
    if result.logits_shape and result.logits_stats:
        s = result.logits_stats
        table.add_row("logits", f"shape {tuple(result.logits_shape)}  mean {_fixed(s['mean'], 4)}  "
                      f"std {_fixed(s['std'], 4)}  min {_fixed(s['min'], 3)}  max {_fixed(s['max'], 3)}")
    if result.loss is not None:
        table.add_row("loss", f"{_fixed(result.loss, 4)}  ({result.loss_kind})")
    table.add_row("time", f"{result.seconds * 1000:.1f} ms ({result.dtype})")
    table.add_row("compute", f"{human_flops(result.flops)} → {result.gflops_per_s:.1f} GFLOP/s")
    if result.encoder_norms is not None:
        table.add_row("encoder output norm", norm_summary(result.encoder_norms))
    stack = "decoder" if result.family != "encoder" else "encoder"
    table.add_row(f"{stack} output norm", norm_summary(result.hidden_norms))
    return table


SHOWN_VALUES = 6  # leading values of each embedding in the table (JSON / --save-npz have all)


def _embedding_table(embedding: SentenceEmbedding) -> FitTable:
    dim = len(embedding.vectors[0])
    table = FitTable(title=f"sentence embedding ({embedding.method}; {dim:,} dims)")
    table.add_column("seq", justify="right", number=True)
    table.add_column("norm", justify="right", number=True)
    table.add_column(f"first {min(dim, SHOWN_VALUES)} values")
    shown, more = _shown_sequences(len(embedding.vectors))
    for b in shown:
        values = ", ".join(f"{v:.4f}" for v in embedding.vectors[b][:SHOWN_VALUES])
        table.add_row(str(b), f"{embedding.norms[b]:.4f}", f"[{values}{', …' if dim > SHOWN_VALUES else ''}]")
    if more:
        table.add_row("", "", more)
    return table


def _similarity_table(similarity: list[list[float]]) -> FitTable:
    table = FitTable(title="cosine similarity between the sequences")
    shown, more = _shown_sequences(len(similarity))
    table.add_column("seq", justify="right", number=True)
    for b in shown:
        table.add_column(str(b), justify="right", number=True)
    for a in shown:
        table.add_row(str(a), *[f"{similarity[a][b]:.4f}" for b in shown])
    if more:
        table.add_row("", more)
    return table


MAX_LABELS_SHOWN = 8  # label scores shown per sequence; --format json has them all


def _label_scores(scores: list[float]) -> str:
    shown = [f"{v:.4g}" for v in scores[:MAX_LABELS_SHOWN]]
    more = len(scores) - MAX_LABELS_SHOWN
    return "[" + ", ".join(shown + ([f"… {more} more"] if more > 0 else [])) + "]"


def _scores_table(scores: HeadScores) -> FitTable:
    """A classification head's output: each sequence's label scores and best label, or (per
    token) each real position's best label."""
    per_token = scores.head == "token_classification"
    table = FitTable(title=f"{scores.head.replace('_', ' ')} logits ({scores.num_labels} labels)")
    table.add_column("seq", justify="right", number=True)
    table.add_column("best label per position" if per_token else "best label")
    if not per_token:
        table.add_column("scores")
    shown, more = _shown_sequences(len(scores.predicted))
    for b in shown:
        best = scores.predicted[b]
        if per_token:
            table.add_row(str(b), _norm_list([float(x) for x in best]))  # type: ignore[union-attr]
        else:
            table.add_row(str(b), str(best), _label_scores(scores.scores[b]))  # type: ignore[arg-type]
    if more:
        table.add_row("", more, *([] if per_token else [""]))
    return table


def render_run(result: RunResult) -> RenderableType:
    parts: list[RenderableType] = [_summary(result)]
    if result.top_next:
        parts.append(_top_table(result))
    if result.scores is not None:
        parts.append(_scores_table(result.scores))
    if result.embedding is not None:
        parts.append(_embedding_table(result.embedding))
        if result.embedding.similarity is not None:
            parts.append(_similarity_table(result.embedding.similarity))
    parts += [plain(f"note: {n}", style="dim") for n in result.notes]
    return Group(*parts)

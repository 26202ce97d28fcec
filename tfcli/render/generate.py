"""Rich rendering of `tfcli generate`: the live token stream and the summary table. Every
verdict (KV cache equal to its formula, cache check OK) comes with the result; this only draws."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Group, RenderableType
from rich.live import Live
from rich.text import Text

from tfcli.analysis.generate.timed import CACHE_EPS_FACTOR, GenerateResult, Timed
from tfcli.render.output import stderr_console
from tfcli.render.safe import PROSE, plain
from tfcli.render.tables import FitTable
from tfcli.render.units import human_bytes
from tfcli.checkpoints.tokenizer import Tokenizer

OnToken = Callable[[list[int]], None]  # called with the new tokens so far, after each step


@contextmanager
def stream_generation(prompt: Sequence[int], tokenizer: Tokenizer | None, *,
                      live: bool = True) -> Iterator[OnToken | None]:
    """Show the tokens as they arrive with rich Live, on stderr (stdout holds only the final
    result), gone once the block ends; yields the on_token callback for generate_text. With
    `live` False (json / csv output) nothing is shown and the callback is None. Ctrl-C during
    generation ends the loop with the tokens so far, which the result (shown next) holds."""
    console = stderr_console()
    if not (live and console.is_terminal):  # elsewhere a live view is only a stray blank line
        yield None
        return
    shown_prompt = tokenizer.decode(list(prompt)) if tokenizer else str(list(prompt))

    def shown(new: list[int]) -> str:
        return tokenizer.decode(new) if tokenizer else " " + " ".join(map(str, new))

    with Live(render_stream(shown_prompt, ""), console=console, transient=True,
              refresh_per_second=20) as view:
        try:
            yield lambda new: view.update(render_stream(shown_prompt, shown(new)))
        except KeyboardInterrupt:  # a stop outside the generation loop (which keeps its tokens
            view.transient = False  # in the result): what was shown stays on the terminal
            raise


def render_stream(prompt: str, new_text: str) -> Text:
    """What rich Live shows while tokens arrive: the prompt dim, the continuation bold."""
    text = plain(prompt, style="dim", keep=PROSE)  # a random model's bytes include ESC and BEL
    text.append_text(plain(new_text, style="bold", keep=PROSE))
    return text


def _timing_rows(table: FitTable, label: str, run: Timed) -> None:
    table.add_row(f"{label}: prefill", f"{run.prefill_seconds * 1000:.1f} ms (to the first new token)")
    table.add_row(f"{label}: decode", f"{run.decode_tokens_per_s:.1f} tokens/s "
                  f"({run.decode_steps} steps in {run.decode_seconds * 1000:.1f} ms)")


def _kv_row(table: FitTable, result: GenerateResult) -> None:
    allocated, formula = result.kv_allocated_bytes, result.kv_formula_bytes
    if result.cached is None:
        table.add_row("KV cache", f"none (--no-cache); formula would give {human_bytes(formula)}")
        return
    mark = (Text("equal", style="green") if result.kv_matches_formula
            else Text("DIFFER", style="red bold"))
    table.add_row("KV cache", Text.assemble(f"formula {formula:,} B, allocated {allocated:,} B "
                                            f"({human_bytes(allocated)}) ", mark))


SHOWN_TOKENS = 24  # new token ids listed in the table; --format json has them all


def _token_list(tokens: Sequence[int]) -> str:
    """`30: [1, 2, ...] … and 6 more (--format json lists all)`."""
    shown = f"{len(tokens)}: {list(tokens[:SHOWN_TOKENS])}"
    left = len(tokens) - SHOWN_TOKENS
    return shown if left <= 0 else f"{shown} … and {left} more (--format json lists all)"


def render_generate(result: GenerateResult) -> RenderableType:
    table = FitTable(title="generation", show_header=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("spec", f"{result.spec_name} ({result.dtype}, {result.origin})")
    table.add_row("prompt tokens", str(len(result.prompt_tokens)))
    table.add_row("new tokens", _token_list(result.new_tokens))
    if result.cached:
        _timing_rows(table, "cached", result.cached)
    if result.uncached:
        _timing_rows(table, "no cache", result.uncached)
    _kv_row(table, result)
    if result.speedup is not None:
        table.add_row("speed-up", f"{result.speedup:.2f}x cached vs recomputing the prefix")
    if result.check is not None:
        c = result.check
        verdict = Text("OK", style="green bold") if c.ok else Text("FAILED", style="red bold")
        table.add_row("cache check", Text.assemble(
            verdict, f"  tokens {'identical' if c.identical_tokens else 'DIFFER'}, "
            f"max |Δlogit| {c.max_abs_logit_diff:.2e} (tolerance {c.tolerance:.2e} = "
            f"{CACHE_EPS_FACTOR} eps × logit scale {c.logit_scale:.3g})"))
    parts: list[RenderableType] = [table]
    if result.text is not None:
        parts.insert(0, plain(result.text, keep=PROSE))
    parts += [plain(f"note: {note}", style="dim") for note in result.notes]
    return Group(*parts)

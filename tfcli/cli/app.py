"""The tfcli command line: thin Typer commands that parse options, call one library function,
and hand the result to a renderer. Heavy modules (numpy engine, torch, matplotlib) are imported
inside the commands that need them, so `tfcli --help` and `tfcli params` start fast.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

import typer

from tfcli import __version__
from tfcli.api import model as api
from tfcli.cli.options import (
    DtypeOpt,
    F,
    FormatOpt,
    LayersOpt,
    SeedOpt,
    SpecArg,
    WeightsOpt,
    handle_errors,
    old_name,
    one_text,
    renamed,
)
from tfcli.core.dtypes import ActivationDtype, KvDtype, SweepDtype
from tfcli.cli.perf import CausalHalfOpt, MacsOpt, MatmulsOnlyOpt, WindowOpt, flop_convention
from tfcli.core.errors import EXIT_BAD_INPUT
from tfcli.cli.guard import GuardedCommand, GuardedGroup
from tfcli.render.output import (
    OutputFormat, emit, emit_text, stderr_console,
)

app = typer.Typer(
    name="tfcli",
    help="Inspect and run Transformer architectures: exact parameter counts, per-op traces, "
    "a NumPy forward pass, KV-cached generation and depth sweeps.",
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    cls=GuardedGroup,  # one line per error, whatever fails (option errors, full disks, bugs)
)



SWEEP_SPEC = api.SWEEP_SPEC  # depth-sweep's default SPEC: small enough for 64 layers in seconds


class Sublayer(str, Enum):
    """`tfcli depth-sweep --sublayer`: what one layer of the stack is (analysis/depth.py)."""

    block = "block"
    attention = "attention"
    ffn = "ffn"
    linear = "linear"


class PoolChoice(str, Enum):
    """`tfcli run --pool`: how hidden states become one sentence embedding (engine/pooling.py)."""

    mean = "mean"
    cls = "cls"
    last = "last"
    none = "none"


def command(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    """`@app.command` with the error handling every command shares."""

    def register(func: F) -> F:
        app.command(*args, cls=GuardedCommand, **kwargs)(handle_errors(func))
        return func

    return register


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tfcli {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                           help="Show the version and exit.")
    ] = False,
) -> None:
    """Inspect and run Transformer architectures."""


@command("params")
def params_cmd(
    spec: SpecArg,
    seq_len: Annotated[int | None, typer.Option("--seq-len", min=1, help="Tokens the KV cache holds per sequence (default: the spec's max_seq_len).")] = None,
    batch: Annotated[int, typer.Option(min=1, help="KV-cache batch size.")] = 1,
    kv_dtype: Annotated[KvDtype, typer.Option(help="KV-cache dtype.")] = "float32",
    layers: LayersOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    context: Annotated[int | None, old_name("--context", "--seq-len", min=1)] = None,
) -> None:
    """Parameter count per component, exact to the parameter; memory; KV cache.

    Example: tfcli params llama-3-8b --seq-len 8192 --batch 4 --kv-dtype bfloat16
    """
    from tfcli.render.params import render_params

    seq_len = renamed("--context", "--seq-len", context, seq_len)
    report = api.load(spec, layers=layers).params(seq_len=seq_len, batch=batch,
                                                  kv_dtype=kv_dtype.value)
    emit(report, fmt, lambda: render_params(report))


@command("specs")
def specs_cmd(
    name: Annotated[str | None, typer.Argument(metavar="NAME", help="A bundled spec: print its YAML as shipped, to start your own from (tfcli specs gpt2 > my.yaml).", show_default=False)] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """The bundled specs, one line each: family, layers, d_model, total parameters; with NAME,
    that spec's YAML. lesson-tiny is a 4-block decoder of d_model 16 (16,704 parameters): every
    command runs on it in milliseconds.

    Example: tfcli specs llama-3-8b > my-llama.yaml
    """
    from tfcli.render.catalog import render_catalog

    if name is not None:
        from tfcli.spec.load import bundled_spec_text

        emit_text(bundled_spec_text(name))
        return
    catalog = api.specs()
    emit(catalog, fmt, lambda: render_catalog(catalog))


@command("validate")
def validate_cmd(
    specs: Annotated[list[str], typer.Argument(metavar="SPEC", help="Spec files or names.", show_default=False)],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Check spec files: OK or the error for each; exit 2 if any is bad.

    Example: tfcli validate specs/*.yaml
    """
    from tfcli.render.catalog import render_validation

    report = api.validate(specs)
    emit(report, fmt, lambda: render_validation(report))
    if not report.ok:
        raise typer.Exit(EXIT_BAD_INPUT)


@command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of the spec format, for editors that validate YAML as you type.

    Example: tfcli schema > tfcli-spec.schema.json
    """
    import json

    from tfcli.spec.model import spec_json_schema

    emit_text(json.dumps(spec_json_schema(), indent=2) + "\n")


@command("import-config")
def import_config_cmd(
    directory: Annotated[str, typer.Argument(metavar="DIR",
        help="Hugging Face model directory with config.json, a Hub id (org/name), or a GGUF file.")],
) -> None:
    """Turn a Hugging Face config.json (or a GGUF file's metadata) into a tfcli spec (YAML on
    stdout).

    Example: tfcli import-config ./my-llama > my-llama.yaml
    """
    from tfcli.checkpoints import spec_to_yaml
    from tfcli.sources import resolve_checkpoint

    spec = resolve_checkpoint(directory).load_spec()
    emit_text(spec_to_yaml(spec, source=directory))


@command("run")
def run_cmd(
    spec: SpecArg,
    text_args: Annotated[list[str] | None, typer.Argument(metavar="TEXT", help="Input texts (as --text).", show_default=False)] = None,
    text: Annotated[list[str] | None, typer.Option(help="Input text (UTF-8 bytes, or the checkpoint's tokenizer.json); repeat it for a batch, each text encoded alone and right-padded under a mask.")] = None,
    tokens: Annotated[str | None, typer.Option(metavar="IDS", help="Input token ids, e.g. 1,2,3.")] = None,
    target: Annotated[str | None, typer.Option(help="Encoder-decoder: decoder input text.")] = None,
    batch: Annotated[int, typer.Option(min=1, help="Random input: sequences.")] = 1,
    seq_len: Annotated[int | None, typer.Option(min=1, help="Random input: length (default 16).")] = None,
    weights: WeightsOpt = None,
    layers: LayersOpt = None,
    dtype: DtypeOpt = "float32",
    seed: SeedOpt = 0,
    save_npz: Annotated[str | None, typer.Option(metavar="FILE.npz", help="Write tokens, hidden states and logits to FILE.npz.")] = None,
    truncate: Annotated[bool, typer.Option("--truncate", help="Cut a --text / --target longer than the model takes (keeps its start) instead of refusing it.")] = False,
    pool: Annotated[PoolChoice | None, typer.Option("--pool", help="Sentence embedding: mean over the real tokens (the default for encoders, as sentence-transformers), cls (the first token), last (the last real token), none.")] = None,
    normalize: Annotated[bool, typer.Option("--normalize", help="L2-normalise the sentence embedding.")] = False,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """A real forward pass: logits, top-5 next tokens, loss, timing, output norms, and a
    sentence embedding (--pool; encoders by default) with the texts' cosine similarities.

    Example: tfcli run gpt2 "The Transformer is" --layers 2
    """
    from tfcli.render.run import render_run

    result = api.load(spec, layers=layers).run(
        [*(text_args or []), *(text or [])] or None,  # TEXT... and --text: one list
        tokens=tokens, target=target, batch=batch, seq_len=seq_len, weights=weights,
        dtype=dtype.value, seed=seed, save_npz=save_npz, truncate=truncate,
        pool=None if pool is None else pool.value, normalize=normalize, progress=True)
    emit(result, fmt, lambda: render_run(result))


@command("generate")
def generate_cmd(
    spec: SpecArg,
    text_arg: Annotated[str | None, typer.Argument(metavar="TEXT", help="The prompt (as --text).", show_default=False)] = None,
    text: Annotated[str | None, typer.Option("--text", help="Prompt text (UTF-8 bytes, or the checkpoint's tokenizer.json).")] = None,
    tokens: Annotated[str | None, typer.Option(metavar="IDS", help="Prompt token ids, e.g. 1,2,3.")] = None,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Tokens to generate.")] = 32,
    temperature: Annotated[float, typer.Option(min=0.0, help="0 = greedy.")] = 0.0,
    top_k: Annotated[int | None, typer.Option(min=1, help="Sample among the k most likely.")] = None,
    top_p: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Nucleus sampling mass.")] = None,
    stop_token: Annotated[int | None, typer.Option(help="Also stop when this id is produced.")] = None,
    ignore_eos: Annotated[bool, typer.Option("--ignore-eos", help="Do not stop at the checkpoint's end-of-sequence token(s) (generation_config.json / GGUF eos).")] = False,
    truncate: Annotated[bool, typer.Option("--truncate", help="Cut a prompt too long to leave room for the new tokens (keeps its end) instead of refusing it.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Recompute the whole prefix every step.")] = False,
    check_cache: Annotated[bool, typer.Option("--check-cache", help="Run cached and uncached; exit 1 unless equal.")] = False,
    compare: Annotated[bool, typer.Option("--compare", help="Run cached and uncached; report the speed-up.")] = False,
    weights: WeightsOpt = None,
    layers: LayersOpt = None,
    dtype: DtypeOpt = "float32",
    seed: SeedOpt = 0,
    fmt: FormatOpt = OutputFormat.table,
    old_prompt: Annotated[str | None, old_name("--prompt", "--text")] = None,
) -> None:
    """Autoregressive generation with a KV cache, streamed live, checked against recomputation.

    Example: tfcli generate gpt2 "Hello" --max-new-tokens 20 --layers 2 --check-cache
    """
    from tfcli.analysis.generate.mode import GenerationMode
    from tfcli.core.errors import CheckFailedError
    from tfcli.render.generate import render_generate

    prompt = one_text(text_arg, renamed("--prompt", "--text", old_prompt, text))
    mode = GenerationMode.from_flags(no_cache=no_cache, check_cache=check_cache, compare=compare)
    result = api.load(spec, layers=layers).generate(
        prompt, tokens=tokens, max_new_tokens=max_new_tokens, temperature=temperature,
        top_k=top_k, top_p=top_p, stop_token=stop_token, ignore_eos=ignore_eos,
        truncate=truncate, mode=mode.value, weights=weights, dtype=dtype.value, seed=seed,
        live=fmt is OutputFormat.table, progress=True)
    emit(result, fmt, lambda: render_generate(result))
    if result.check is not None and result.check.failure:
        raise CheckFailedError(result.check.failure)


@command("trace")
def trace_cmd(
    spec: SpecArg,
    batch: Annotated[int, typer.Option(min=1, help="Sequences per batch.")] = 1,
    seq_len: Annotated[int | None, typer.Option(min=1, help="Tokens per sequence (default min(max_seq_len, 128)).")] = None,
    src_len: Annotated[int | None, typer.Option(min=1, help="Encoder-decoder: source length.")] = None,
    tgt_len: Annotated[int | None, typer.Option(min=1, help="Encoder-decoder: target length.")] = None,
    depth: Annotated[int, typer.Option(min=1, max=3, help="Fold rows: 1 block, 2 sublayer, 3 op.")] = 3,
    dtype: Annotated[ActivationDtype, typer.Option(help="Activation dtype for the byte column.")] = "float32",
    execute: Annotated[bool, typer.Option("--execute", help="Run a real forward pass and check every shape.")] = False,
    macs: MacsOpt = False,
    causal_half: CausalHalfOpt = False,
    window: WindowOpt = False,
    matmuls_only: MatmulsOnlyOpt = False,
    layers: LayersOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="--execute: seed of the random weights (default 0).")] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Shapes, FLOPs and activation memory through each block, analytic for any size.

    Example: tfcli trace llama-2-7b --seq-len 4096 --depth 2
    """
    from tfcli.render.trace import render_trace

    model = api.load(spec, layers=layers)
    report = model.trace(batch=batch, seq_len=seq_len, src_len=src_len, tgt_len=tgt_len,
                         depth=depth, dtype=dtype.value,
                         convention=flop_convention(macs, causal_half, window, matmuls_only))
    if not execute:
        emit(report, fmt, lambda: render_trace(report))
        return
    _trace_execute(model, report, seed or 0, fmt)


def _trace_execute(model: Any, report: Any, seed: int, fmt: OutputFormat) -> None:
    """--execute: the analytic trace plus the shape check, as one result."""
    from rich.console import Group

    from tfcli.core.errors import CheckFailedError
    from tfcli.render.trace import render_execute_check, render_trace

    both = model.check_trace(report, seed=seed, progress=True)
    check = both.check
    emit(both, fmt, lambda: Group(render_trace(report), render_execute_check(check)))
    if fmt in (OutputFormat.csv, OutputFormat.markdown):  # no place in the rows: to stderr
        stderr_console().print(render_execute_check(check))
    if not check.ok:
        raise CheckFailedError(f"{len(check.mismatches)} analytic shapes differ from the forward pass")


@command("depth-sweep")
def depth_sweep_cmd(
    spec: Annotated[str | None, typer.Argument(metavar="SPEC", help=f"Spec whose block is stacked (default: {SWEEP_SPEC}, a pre-LN decoder block of d_model 16, 4 heads, d_ff 64; none for --sublayer linear).", show_default=False)] = None,
    depths: Annotated[str, typer.Option(metavar="LIST", help="Depths measured, in one pass to the largest.")] = "1,2,4,8,16,32,64",
    variants: Annotated[str, typer.Option(metavar="LIST", help="Stacks compared, from pre, post, plain, residual-no-norm.")] = "pre,post,plain",
    sublayer: Annotated[Sublayer, typer.Option(help="What is stacked: the whole block, attention or the FFN alone, or linear (LayerNorm then a random d×d matrix, no spec needed).")] = "block",
    seq_len: Annotated[int, typer.Option(min=1, help="Positions per sequence.")] = 16,
    batch: Annotated[int, typer.Option(min=1, help="Sequences.")] = 1,
    seed: SeedOpt = 0,
    dtype: Annotated[SweepDtype, typer.Option(help="float64 by default: a collapsed rank or a vanishing gain shows down to 1e-16, not float32's 1e-7 rounding floor.")] = "float64",
    share_weights: Annotated[bool, typer.Option("--share-weights", help="Reuse one layer's weights at every depth (one matrix applied L times: its spectrum decides the signal).")] = False,
    init_std: Annotated[float | None, typer.Option(help="Override the spec's init_std.")] = None,
    weight_scale: Annotated[float | None, typer.Option(help="--sublayer linear: std of the d×d matrix (default 1/sqrt(d)).")] = None,
    d_model: Annotated[int | None, typer.Option(help="Override d_model (linear: default 16).")] = None,
    n_heads: Annotated[int | None, typer.Option(help="Override n_heads.")] = None,
    n_kv_heads: Annotated[int | None, typer.Option(help="Override n_kv_heads.")] = None,
    d_ff: Annotated[int | None, typer.Option(help="Override d_ff.")] = None,
    directions: Annotated[int, typer.Option(min=1, help="Random directions averaged for the Jacobian gain.")] = 3,
    plot: Annotated[str | None, typer.Option(metavar="FILE.png", help="Also write the chart to FILE.png (needs tfcli[plot]: pip install 'tfcli[plot]').")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Residual vs plain vs post-LN stacks: output norms, Jacobian gain and rank collapse by depth.

    Example: tfcli depth-sweep --sublayer linear --share-weights --d-model 16 --seq-len 6 --weight-scale 0.3 --depths 20 --seed 0
    """
    from tfcli.render.depth import render_depth_sweep

    result = api.depth_sweep(
        spec, depths=depths, variants=variants, sublayer=sublayer.value, seq_len=seq_len,
        batch=batch, seed=seed, dtype=dtype.value, share_weights=share_weights,
        init_std=init_std, weight_scale=weight_scale, d_model=d_model, n_heads=n_heads,
        n_kv_heads=n_kv_heads, d_ff=d_ff, directions=directions, plot=plot,
        progress=not quiet and fmt is OutputFormat.table)
    emit(result, fmt, lambda: render_depth_sweep(result))


from tfcli.cli import perf as cli_perf  # noqa: E402  (commands in modules of their own, registered here)

command("gpus")(cli_perf.gpus_cmd)
command("perf")(cli_perf.perf_cmd)

from tfcli.cli import diff as cli_diff  # noqa: E402

command("diff")(cli_diff.diff_cmd)

from tfcli.cli import memory as cli_memory  # noqa: E402

command("memory")(cli_memory.memory_cmd)


def main() -> None:
    """Console-script entry point. A Ctrl-C that lands before the guard runs (while typer builds
    the command group) or after it exits 130 as quietly as one during a command."""
    try:
        app(prog_name="tfcli")
    except KeyboardInterrupt as stop:
        from tfcli.core.errors import EXIT_SIGNAL_BASE, interrupt_signal  # loaded already

        raise SystemExit(EXIT_SIGNAL_BASE + interrupt_signal(stop)) from None


if __name__ == "__main__":  # pragma: no cover
    main()

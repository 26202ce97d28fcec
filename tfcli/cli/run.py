"""`tfcli run`, `generate` and `depth-sweep`: a real forward pass, generation, and stacks of
one block. Plain functions on the shared option types, registered in tfcli/cli/app.py's
COMMANDS."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from tfcli.api import model as api
from tfcli.cli.options import (
    DtypeOpt, FormatOpt, LayersOpt, SeedOpt, SpecArg, WeightsOpt, old_name, one_text, renamed,
)
from tfcli.core.dtypes import SweepDtype
from tfcli.render.output import OutputFormat, emit

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
    inputs: Annotated[str | None, typer.Option("--inputs", metavar="FILE.npz", help="The input from an .npz file: tokens (B, N) ids, or embeddings (B, N, d_model) fed straight into block 0 (as a lesson's X).")] = None,
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
        pool=None if pool is None else pool.value, normalize=normalize, progress=True,
        inputs=inputs)
    emit(result, fmt, lambda: render_run(result))


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


def depth_sweep_cmd(
    spec: Annotated[str | None, typer.Argument(metavar="SPEC", help=f"Spec whose block is stacked (default: {SWEEP_SPEC}, a pre-LN decoder block of d_model 16, 4 heads, d_ff 64; none for --sublayer linear).", show_default=False)] = None,
    depths: Annotated[str, typer.Option(metavar="LIST", help="Depths measured, in one pass to the largest.")] = "1,2,4,8,16,32,64",
    variants: Annotated[str, typer.Option(metavar="LIST", help="Stacks compared, from pre, post, plain, residual-no-norm.")] = "pre,post,plain",
    sublayer: Annotated[Sublayer, typer.Option(help="What is stacked: the whole block, attention or the FFN alone, or linear (LayerNorm then a random d×d matrix, no spec needed).")] = "block",
    seq_len: Annotated[int | None, typer.Option(min=1, show_default=False, help="Positions per sequence. [default: 16]")] = None,
    batch: Annotated[int | None, typer.Option(min=1, show_default=False, help="Sequences. [default: 1]")] = None,
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
    weights: Annotated[str | None, typer.Option("--weights", metavar="FILE.npz", help="Your own arrays for the stacked layers, by engine path: decoder.blocks.*.attn.wq for every layer (blocks.3 for one; --sublayer linear: blocks.*.w), x @ W; the rest keeps the seed's draw.")] = None,
    inputs: Annotated[str | None, typer.Option("--inputs", metavar="FILE.npz", help="Your own input X0 for the stack: an array `embeddings` (B, N, d_model); it sets --batch and --seq-len.")] = None,
    gradients: Annotated[bool, typer.Option("--gradients", help="Also a backward pass through the deepest stack: each layer's gradient norms of a random-readout loss at initialisation (where post-LN's trouble is).")] = False,
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
        progress=not quiet and fmt is OutputFormat.table, gradients=gradients, weights=weights,
        inputs=inputs)
    emit(result, fmt, lambda: render_depth_sweep(result))

"""tfcli as a library: a model loaded from any SPEC form, asked what the commands ask.

    import tfcli

    model = tfcli.load("gpt2")                    # bundled name, YAML, model dir, Hub id, GGUF
    model.params().total                          # 124,439,808
    model.trace(seq_len=1024).total_flops
    model.memory(seq_len=4096, train=True, gpu="a100-80gb")
    tfcli.diff("llama-2-7b", "mistral-7b")

Every call returns the result object its command renders; `to_dict()` is the JSON that
`tfcli <command> -f json` prints. Each command's body in tfcli/cli is: parse the options, one
call here, one renderer.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tfcli.api.terms import given_options, in_api_terms
from tfcli.sources import Source, resolve_source

if TYPE_CHECKING:
    from tfcli.analysis.catalog import Catalog, ValidationReport
    from tfcli.analysis.depth.result import DepthSweepResult
    from tfcli.analysis.diff import SpecDiff
    from tfcli.analysis.generate.timed import GenerateResult
    from tfcli.analysis.gpus.catalog import GpuList
    from tfcli.analysis.memory.fit import MemoryReport
    from tfcli.analysis.params_report import ParamsReport
    from tfcli.analysis.perf.result import PerfEstimate
    from tfcli.analysis.run.forward import RunResult
    from tfcli.analysis.sweep import SweepAxes, SweepResult
    from tfcli.analysis.trace.build import TraceReport
    from tfcli.analysis.trace.check import TracedExecution
    from tfcli.analysis.trace.conventions import FlopConvention
    from tfcli.spec.model import Spec

Axis = int | Sequence[int] | str  # one value, several (a sweep), or the command line's "1,8,32"
LOADING = "loading the weights (random ones are drawn, a checkpoint is read)"
SWEEP_SPEC = "lesson-tiny"  # depth_sweep's default spec: small enough for 64 layers in seconds


@in_api_terms
def load(spec: str | Source, *, layers: int | None = None) -> Model:
    """The model a SPEC names: a bundled spec's name, a YAML file, a Hugging Face model
    directory (or its config.json), a Hub id `org/name[@revision]`, or a GGUF file. `layers`
    gives every stack that many blocks (fewer to fit, more to size a deeper variant)."""
    source = spec if isinstance(spec, Source) else resolve_source(spec)
    if layers is not None and layers < 1:
        from tfcli.core.errors import BadInputError

        raise BadInputError(f"--layers must be at least 1 (got {layers})")
    return Model(source, layers)


def _status(progress: bool, label: str) -> AbstractContextManager[object]:
    if not progress:
        return nullcontext()
    from tfcli.render.output import slow_status

    return slow_status(label)


def _axis_text(value: Axis | None) -> str | None:
    """An axis as the command line writes it, for the one parser of sweeps."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return ",".join(str(v) for v in value)


def _check_plot(plot: str | None, sweeping: bool) -> None:
    """Before any work: a chart only of a sweep, to a .png, with matplotlib installed."""
    if plot is None:
        return
    from tfcli.core.errors import BadInputError

    if not sweeping:
        raise BadInputError("--plot charts a sweep: give --batch or --seq-len a comma list "
                            "(e.g. --seq-len 1024,8192)")
    from tfcli.render.sweep import check_png_possible

    check_png_possible(plot)


def _refuse_unread(command: str, func: Any, values: dict[str, Any]) -> None:
    """The option-mode table (tfcli.api.modes) for a call from Python: a parameter set away
    from its default in a mode that does not read it is refused by name."""
    from tfcli.api.modes import refused_option
    from tfcli.core.errors import BadInputError

    message = refused_option(command, values, given_options(func, values))
    if message is not None:
        raise BadInputError(message)


@dataclass(frozen=True)
class Model:
    """A resolved SPEC (`source`), its Spec read on first use, cut to `layers` when given."""

    source: Source
    layers: int | None = None

    @cached_property
    def spec(self) -> Spec:
        spec = self.source.load_spec()
        return spec.with_layers(self.layers) if self.layers else spec

    @in_api_terms
    def params(self, *, seq_len: int | None = None, batch: int = 1,
               kv_dtype: str = "float32") -> ParamsReport:
        """Parameters per component, exact to the parameter; memory; the KV cache of `batch`
        sequences of `seq_len` tokens (default max_seq_len); a checkpoint's stored tensors."""
        from tfcli.analysis.params_report import build_params_report
        from tfcli.analysis.stored import stored_for

        stored = None if self.layers else stored_for(self.source, self.spec)  # every layer
        return build_params_report(self.spec, context=seq_len, batch=batch, kv_dtype=kv_dtype,
                                   stored=stored)

    @in_api_terms
    def trace(self, *, batch: int = 1, seq_len: int | None = None, src_len: int | None = None,
              tgt_len: int | None = None, depth: int = 3, dtype: str = "float32",
              convention: FlopConvention | None = None) -> TraceReport:
        """Shapes, FLOPs and activation bytes of one forward pass, op by op (depth 3), per
        sublayer (2) or per block (1); `convention` recounts the FLOPs (MACs, causal half...)."""
        from tfcli.analysis.trace.build import build_trace
        from tfcli.analysis.trace.conventions import FlopConvention, apply_convention
        from tfcli.core.errors import BadInputError

        if None not in (seq_len, src_len, tgt_len):  # --seq-len is only their default
            raise BadInputError(f"--seq-len {seq_len} sets the lengths --src-len and --tgt-len "
                                "leave out; with both given it would set nothing: drop it")
        report = build_trace(self.spec, batch=batch, seq_len=seq_len, src_len=src_len,
                             tgt_len=tgt_len, dtype=dtype).at_depth(depth)
        return apply_convention(report, self.spec, convention or FlopConvention())

    @in_api_terms
    def check_trace(self, report: TraceReport, *, seed: int = 0,
                    progress: bool = False) -> TracedExecution:
        """`report` checked against a real forward pass of random weights: every shape."""
        from tfcli.analysis.trace.check import TracedExecution, execute_check

        with _status(progress, "drawing weights and running the forward pass"):
            check = execute_check(self.spec, report, seed=seed)
        return TracedExecution(report, check)

    @in_api_terms
    def run(self, text: str | Sequence[str] | None = None, *, tokens: str | None = None,
            target: str | None = None, batch: int = 1, seq_len: int | None = None,
            weights: str | None = None, dtype: str = "float32", seed: int = 0,
            save_npz: str | None = None, truncate: bool = False, pool: str | None = None,
            normalize: bool = False, progress: bool = False,
            inputs: str | None = None) -> RunResult:
        """One real forward pass: logits, top-5 next tokens, loss, norms, timing and, for
        encoders or with `pool`, a sentence embedding. Input: `text` (one or a batch),
        `tokens` ("1,2,3"), random ids of `batch` x `seq_len`, or `inputs` (an .npz file of
        `tokens` or the first block's `embeddings`). Weights: the source's checkpoint,
        `weights` (a model directory, a GGUF file, or an .npz of arrays by engine path over
        the random draw), else random ones of `seed`."""
        import functools

        from tfcli.analysis.model_source import load_model
        from tfcli.analysis.run.forward import (
            build_inputs, check_npz_path, default_pooling, run_forward, run_plan, save_npz as write,
        )

        if save_npz is not None:
            check_npz_path(save_npz)  # before the work, not after it
        if inputs is not None:
            return self._run_npz_inputs(inputs, text=text, tokens=tokens, target=target,
                                        batch=batch, seq_len=seq_len, weights=weights,
                                        dtype=dtype, seed=seed, save_npz=save_npz,
                                        truncate=truncate, pool=pool, normalize=normalize,
                                        progress=progress)
        plan = functools.partial(run_plan, text=text, tokens=tokens, target=target, batch=batch,
                                 seq_len=seq_len)
        with _status(progress, LOADING):
            loaded = load_model(self.source, weights_dir=weights, layers=self.layers,
                                dtype=dtype, seed=seed, estimate=plan)
        inputs = build_inputs(loaded.spec, text=text, tokens=tokens, target=target, batch=batch,
                              seq_len=seq_len, seed=seed, weights_dir=loaded.weights_dir,
                              truncate=truncate)
        pooling = default_pooling(loaded.spec, pool)
        if normalize and pooling is None:
            from tfcli.core.errors import BadInputError

            raise BadInputError("--normalize scales a sentence embedding: give --pool "
                                "mean|cls|last (the default for encoders)")
        result, outputs = run_forward(loaded, inputs, seed=seed, pooling=pooling,
                                      normalize=normalize)
        if save_npz is not None:
            write(save_npz, inputs, outputs, result.embedding)
        return replace(result, notes=[*loaded.notes, *result.notes]) if loaded.notes else result

    def _run_npz_inputs(self, path: str, *, text: str | Sequence[str] | None,
                        tokens: str | None, target: str | None, batch: int,
                        seq_len: int | None, weights: str | None, dtype: str, seed: int,
                        save_npz: str | None, truncate: bool, pool: str | None,
                        normalize: bool, progress: bool) -> RunResult:
        """run() on --inputs FILE.npz: the file's tokens through the usual path, or its
        embeddings into block 0 (run_embeddings). Options that shape other inputs are refused
        by name."""
        from tfcli.analysis.allocation import Workload, run_estimate
        from tfcli.analysis.model_source import load_model
        from tfcli.analysis.run.forward import RunInputs, run_embeddings, run_forward
        import numpy as np

        from tfcli.checkpoints.npz import read_npz_inputs
        from tfcli.core.errors import BadInputError

        given = {"--text": text, "--tokens": tokens, "--target": target,
                 "--seq-len": seq_len, "--batch": None if batch == 1 else batch,
                 "--save-npz": save_npz, "--truncate": truncate or None, "--pool": pool,
                 "--normalize": normalize or None}
        clash = [name for name, value in given.items() if value is not None]
        if clash:
            raise BadInputError(f"--inputs gives the input itself; {', '.join(clash)} "
                                "do not apply with it")
        spec = self.spec
        arrays = read_npz_inputs(path, spec)
        shape = (arrays.embeddings if arrays.embeddings is not None else arrays.tokens).shape
        work = Workload(batch=shape[0], seq_len=shape[1], decoder_len=1, loss=True)
        with _status(progress, LOADING):
            loaded = load_model(self.source, weights_dir=weights, layers=self.layers,
                                dtype=dtype, seed=seed,
                                estimate=lambda s, d: run_estimate(s, d, work))
        if arrays.embeddings is not None:
            embeddings = arrays.embeddings.astype(loaded.weights.token_embedding.dtype)
            return run_embeddings(loaded, embeddings, loaded.notes)
        start = None if spec.family != "encoder-decoder" else \
            np.zeros((shape[0], 1), dtype=np.int64)
        result, _ = run_forward(loaded, RunInputs(arrays.tokens, start, "tokens", None), seed=seed)
        return replace(result, notes=[*loaded.notes, *result.notes])

    @in_api_terms
    def generate(self, text: str | None = None, *, tokens: str | None = None,
                 max_new_tokens: int = 32, temperature: float = 0.0, top_k: int | None = None,
                 top_p: float | None = None, stop_token: int | None = None,
                 ignore_eos: bool = False, truncate: bool = False, mode: str = "cache",
                 weights: str | None = None, dtype: str = "float32", seed: int = 0,
                 live: bool = False, progress: bool = False) -> GenerateResult:
        """Autoregressive generation with a KV cache. `mode`: cache, no_cache (recompute the
        prefix each step), check (both; `result.check.failure` says if they differ) or compare
        (both, timed). `live` shows the tokens on a terminal's stderr as they arrive."""
        import functools

        from tfcli.analysis.generate.timed import (
            generate_plan, generate_text, prompt_tokens, stop_tokens,
        )
        from tfcli.analysis.model_source import load_model
        from tfcli.engine.generate import GenerationRequest
        from tfcli.engine.sampling import SamplingConfig
        from tfcli.render.generate import stream_generation

        run_mode = _generation_mode(mode)
        sampling = SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        sampling.validate()  # before any weight exists
        plan = functools.partial(generate_plan, prompt=text, tokens=tokens,
                                 max_new_tokens=max_new_tokens, mode=run_mode)
        with _status(progress, LOADING):
            loaded = load_model(self.source, weights_dir=weights, layers=self.layers,
                                dtype=dtype, seed=seed, estimate=plan)
        given = prompt_tokens(loaded, text, tokens, max_new_tokens=max_new_tokens,
                              truncate=truncate)
        stops, eos_notes = stop_tokens(loaded, stop_token, ignore_eos)
        request = GenerationRequest(prompts=(given.ids,), max_new_tokens=max_new_tokens,
                                    sampling=sampling, stop_tokens=stops)
        with stream_generation(given.ids, given.tokenizer, live=live) as on_token:
            return generate_text(loaded, request, given.tokenizer,
                                 notes=given.notes + eos_notes, mode=run_mode, on_token=on_token)

    @in_api_terms
    def memory(self, *, batch: Axis = 1, seq_len: Axis | None = None, dtype: str | None = None,
               kv_dtype: str | None = None, attention: str = "sdpa", group_size: int = 128,
               train: bool = False, optimizer: str = "adamw", recompute: str = "none",
               dropout: bool = False, gpus: int = 1, zero: int = 0, tp: int = 1,
               lora_rank: int | None = None, lora_targets: str | Sequence[str] | None = None,
               gpu: str | None = None, fit: bool = False, fused: str | Sequence[str] | None = None,
               plot: str | None = None) -> MemoryReport | SweepResult[Any]:
        """Will it fit: weights, KV cache and peak activations for inference; with `train`
        gradients, optimizer state, master weights and saved activations (ZeRO `zero`, tensor
        parallel `tp`, LoRA `lora_rank`). `gpu` gives a verdict, `fit` the largest batch and
        seq_len. Several values of `batch` or `seq_len` sweep (`plot`: the chart as a PNG)."""
        from tfcli.analysis.gpus.catalog import find_gpu
        from tfcli.analysis.memory.fit import build_memory_report
        from tfcli.analysis.memory.plan import MemoryOptions
        from tfcli.core.errors import BadInputError

        _refuse_unread("memory", Model.memory, {
            "train": train, "dtype": dtype, "lora_rank": lora_rank, "gpu": gpu, "gpus": gpus,
            "tp": tp, "zero": zero, "optimizer": optimizer, "recompute": recompute,
            "dropout": dropout, "kv_dtype": kv_dtype, "group_size": group_size,
            "lora_targets": lora_targets, "fit": fit})
        points = self._axes(batch, seq_len, MemoryOptions().resolved_seq_len(self.spec))
        if fit and points.is_sweep:
            raise BadInputError("--fit searches the batch and seq_len itself: give --batch and "
                                "--seq-len one value each")
        _check_plot(plot, points.is_sweep)
        options = MemoryOptions(
            batch=points.batches[0], seq_len=None if seq_len is None else points.seq_lens[0],
            dtype=dtype or ("float32" if attention == "engine" else "bfloat16"),
            attention=attention, kv_dtype=kv_dtype, group_size=group_size, train=train,
            optimizer=optimizer, recompute=recompute, gpus=gpus, zero=zero, tp=tp,
            lora_rank=lora_rank, lora_targets=_lora_targets(lora_targets), dropout=dropout,
            workers=_engine_workers() if attention == "engine" else 1,
            fused=self._fused(fused),
            stored_bytes=None if train or self.layers else self._stored_bytes())
        accelerator = find_gpu(gpu, rates=False) if gpu is not None else None  # its memory
        if points.is_sweep:
            from tfcli.analysis.sweep import memory_sweep

            return _charted(memory_sweep(self.spec, options, points, accelerator), plot)
        return build_memory_report(self.spec, options, accelerator, fit)

    @in_api_terms
    def perf(self, gpu: str, *, batch: Axis = 1, seq_len: Axis | None = None,
             dtype: str | None = None, kv_dtype: str | None = None,
             expert_dtype: str | None = None, mfu: float = 0.5,
             train: bool = False, recompute: str = "none", train_tokens: float | None = None,
             gpus: int = 1, attention: str = "eager", convention: FlopConvention | None = None,
             plot: str | None = None) -> PerfEstimate | SweepResult[Any]:
        """Roofline estimate on `gpu` (`tfcli.gpus()`, or "cpu": this machine, measured):
        prefill, time to first token, decode tokens/s and, with `train`, FLOPs per token, step
        time and GPU-hours for `train_tokens`. Several `batch` / `seq_len` values sweep.
        `expert_dtype` ("mxfp4", or a dtype): the routed experts' matrices as stored (gpt-oss's
        MXFP4: 4.25 bits a weight) in the weights prefill and decode read."""
        from tfcli.analysis.perf.estimate import PerfOptions, build_perf_estimate, default_seq_len
        from tfcli.analysis.trace.conventions import FlopConvention

        _refuse_unread("perf", Model.perf, {"train": train, "train_tokens": train_tokens,
                                            "recompute": recompute, "gpus": gpus})
        points = self._axes(batch, seq_len, default_seq_len(self.spec))
        _check_plot(plot, points.is_sweep)
        options = PerfOptions(
            gpu=gpu, batch=points.batches[0],
            seq_len=None if seq_len is None else points.seq_lens[0], dtype=dtype,
            kv_dtype=kv_dtype, expert_dtype=expert_dtype, mfu=mfu, train=train,
            recompute=recompute, tokens=train_tokens,
            gpus=gpus, attention=attention, convention=convention or FlopConvention())
        if points.is_sweep:
            from tfcli.analysis.sweep import perf_sweep

            return _charted(perf_sweep(self.spec, options, points), plot)
        return build_perf_estimate(self.spec, options)

    def _axes(self, batch: Axis, seq_len: Axis | None, default_seq_len: int) -> SweepAxes:
        from tfcli.analysis.sweep import sweep_axes

        return sweep_axes(_axis_text(batch) or "", _axis_text(seq_len), default_seq_len)

    def _fused(self, fused: str | Sequence[str] | None) -> tuple[str, ...]:
        """`fused` as given ('none': nothing fused), else what the model directory's modules
        fuse (by its config.json model_type)."""
        from tfcli.analysis.memory.activations import FUSIONS, check_fused, checkpoint_fusions
        from tfcli.core.errors import check_names_listed_once

        if fused is None:
            return tuple(sorted(checkpoint_fusions(self.source)))
        names = _names(fused)
        if names == ("none",):
            return ()
        check_names_listed_once("--fused", names, (*FUSIONS, "none"))
        check_fused(frozenset(names))
        return names

    def _stored_bytes(self) -> int | None:
        """A GGUF or quantised checkpoint's weight bytes as stored (their own dtypes, packing
        and scales), which inference loads as they are; None for anything else."""
        from tfcli.analysis.stored import stored_for

        stored = stored_for(self.source, self.spec)
        if stored is None or not (stored.format == "gguf" or stored.quantized) or not stored.n_bytes:
            return None
        return stored.n_bytes


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    """A comma list (or a sequence) as names, empty entries kept for the caller to refuse."""
    items = value.split(",") if isinstance(value, str) else value
    return tuple(item.strip() for item in items)


def _lora_targets(value: str | Sequence[str] | None) -> tuple[str, ...]:
    from tfcli.analysis.memory.plan import MemoryOptions

    return MemoryOptions.lora_targets if value is None else _names(value)


def _engine_workers() -> int:
    from tfcli.engine.parallel import WORKERS  # the engine's thread pool runs this many blocks

    return WORKERS


def _generation_mode(mode: str) -> Any:
    from tfcli.analysis.generate.mode import GenerationMode
    from tfcli.core.errors import BadInputError, not_one_of

    try:
        return GenerationMode(mode.replace("_", "-"))  # no_cache, as a Python name, too
    except ValueError:
        choices = tuple(m.value for m in GenerationMode)
        raise BadInputError(not_one_of("mode", mode, choices)) from None


def _charted(result: SweepResult[Any], plot: str | None,
             chart_key: str | None = None) -> SweepResult[Any]:
    if plot is not None:
        from tfcli.render.sweep import write_sweep_png

        write_sweep_png(result, plot, chart_key)
    return result


@in_api_terms
def diff(a: str | Model, b: str | Model, *, seq_len: int | None = None, batch: int = 1,
         kv_dtype: str = "float32") -> SpecDiff:
    """Two models side by side: architecture, parameters per component, totals, FLOPs per
    token, KV cache, weights memory and the inference plan; with B - A and B / A."""
    from tfcli.analysis.diff import build_spec_diff

    spec_a = (a if isinstance(a, Model) else load(a)).spec
    spec_b = (b if isinstance(b, Model) else load(b)).spec
    return build_spec_diff(spec_a, spec_b, seq_len=seq_len, batch=batch, kv_dtype=kv_dtype)


@in_api_terms
def depth_sweep(spec: str | Model | None = None, *,
                depths: str | Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
                variants: str | Sequence[str] = ("pre", "post", "plain"), sublayer: str = "block",
                seq_len: int | None = None, batch: int | None = None, seed: int = 0,
                dtype: str = "float64",
                share_weights: bool = False, init_std: float | None = None,
                weight_scale: float | None = None, d_model: int | None = None,
                n_heads: int | None = None, n_kv_heads: int | None = None,
                d_ff: int | None = None, directions: int = 3, plot: str | None = None,
                progress: bool = False, gradients: bool = False,
                weights: str | None = None, inputs: str | None = None) -> DepthSweepResult:
    """One block (or sublayer, or `linear`: LayerNorm then a random d x d matrix) stacked to
    each of `depths`, in each of `variants` (pre, post, plain, residual-no-norm): output norms,
    Jacobian gain and rank collapse; with `gradients`, a backward pass through the deepest
    stack and each layer's gradient norms. `spec` defaults to lesson-tiny (none for linear).
    `seq_len` defaults to 16 and `batch` to 1; `inputs` (FILE.npz with `embeddings`
    (B, N, d_model)) is the stack's input and sets both."""
    from tfcli.analysis.depth.sweep import DepthSweepOptions, check_depth_sweep, run_depth_sweep
    from tfcli.core.errors import BadInputError
    from tfcli.core.intlist import parse_int_list
    from tfcli.render.depth import check_png_possible, write_png
    from tfcli.render.output import with_progress

    overrides = {"d_model": d_model, "n_heads": n_heads, "n_kv_heads": n_kv_heads, "d_ff": d_ff,
                 "init_std": init_std}
    if inputs is not None:
        given = [name for name, value in (("--seq-len", seq_len), ("--batch", batch))
                 if value is not None]
        if given:
            raise BadInputError(f"{' and '.join(given)}: --inputs {inputs} sets the batch and "
                                "the positions (its embeddings are (B, N, d_model)); drop "
                                f"{'them' if len(given) > 1 else 'it'}")
    options = DepthSweepOptions(
        depths=tuple(parse_int_list(depths, "--depths")) if isinstance(depths, str)
        else tuple(depths),
        variants=_names(variants), sublayer=sublayer, seq_len=16 if seq_len is None else seq_len,
        batch=1 if batch is None else batch, seed=seed, dtype=dtype,
        share_weights=share_weights, weight_scale=weight_scale, overrides=overrides,
        n_directions=directions, gradients=gradients, weights=weights, inputs=inputs)
    if spec is None and sublayer != "linear":
        spec = SWEEP_SPEC
    model_spec = None if spec is None else (spec if isinstance(spec, Model) else load(spec)).spec
    check_depth_sweep(model_spec, options)
    if plot is not None:  # `plot=''` is refused by name, not taken as no plot
        check_png_possible(plot)
    result = with_progress(lambda bar: run_depth_sweep(model_spec, options, bar), progress,
                           "stacking layers")
    if plot is not None:
        write_png(result, plot)
    return result  # type: ignore[no-any-return]


def gpus(*, measure_cpu: bool = False) -> GpuList:
    """The accelerator catalog: memory, bandwidth and peak FLOP/s per dtype (and this CPU)."""
    from tfcli.analysis.gpus.catalog import build_gpu_list

    return build_gpu_list(measure_cpu=measure_cpu)


def specs() -> Catalog:
    """The bundled specs, one entry each: family, layers, d_model, total parameters."""
    from tfcli.analysis.catalog import build_catalog

    return build_catalog()


def validate(paths: Sequence[str]) -> ValidationReport:
    """Each spec checked: OK, or the error it raises (`report.ok` is whether all passed)."""
    from tfcli.analysis.catalog import validate_specs

    return validate_specs(list(paths))

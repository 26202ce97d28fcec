"""The depth sweep: the lesson's Exercise 3 figures, known behaviour of each variant, the
finite-difference gain against an exact Jacobian-vector product, one pass vs separate runs,
overflow handling, the JSON / CSV schema, and the renderers."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from tfcli.analysis.depth.sweep import DepthSweepOptions, DepthSweepResult, run_depth_sweep
from tfcli.analysis.depth.stack import (
    Float32Initializer, Sublayer, _Packing, health, layer_rng, run_stack, start_states,
    t5_position_bias,
)
from tfcli.engine.attention import attention
from tfcli.engine.inputs import StackInput
from tfcli.engine.model import block_forward
from tfcli.engine.init import Initializer
from tfcli.core.errors import BadInputError
from tfcli.render.depth import (
    PLOT_NEEDS_MATPLOTLIB, _save_atomically, render_depth_sweep, terminal_chart, write_png,
)
from tfcli.spec.model import Spec
from tfcli.sources import load_spec

ALL_VARIANTS = ("pre", "post", "plain", "residual-no-norm")


def small_spec(**changes: object) -> Spec:
    """A GPT-2-shaped decoder small enough for CI: unit-scale LayerNorm, tanh GELU, biases."""
    return load_spec("gpt2").replace(d_model=32, n_heads=4, d_ff=64, **changes)


# --- the lesson's Exercise 3 -----------------------------------------------------------------

LESSON = DepthSweepOptions(
    sublayer="linear", share_weights=True, overrides={"d_model": 16}, seq_len=6,
    weight_scale=0.3, depths=(20,), seed=0,
)


def _lesson_exercise_3() -> tuple[float, float]:
    """The lesson's code (transformer-lesson-a.txt, Exercise 3), verbatim in substance."""
    rng = np.random.default_rng(0)
    n, d = 6, 16

    def layer_norm(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
        mu = x.mean(axis=-1, keepdims=True)
        var = x.var(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps)

    w = rng.normal(scale=0.3, size=(d, d))
    x0 = rng.normal(size=(n, d))
    xr, xp = x0.copy(), x0.copy()
    for _ in range(20):
        xr = xr + layer_norm(xr) @ w
        xp = layer_norm(xp) @ w
    return float(np.linalg.norm(xr, axis=-1).mean()), float(np.linalg.norm(xp, axis=-1).mean())


def test_lesson_figures_to_the_printed_digits() -> None:
    result = run_depth_sweep(None, LESSON)
    assert round(result.point(20, "pre").norm_mean, 3) == 103.043  # printed "residual: 103.043"
    assert round(result.point(20, "plain").norm_mean, 4) == 5.5836  # printed "plain: 5.5836"
    residual, plain = _lesson_exercise_3()
    np.testing.assert_allclose(result.point(20, "pre").norm_mean, residual, rtol=1e-12)
    np.testing.assert_allclose(result.point(20, "plain").norm_mean, plain, rtol=1e-12)
    assert (result.batch, result.dtype, result.d_model) == (1, "float64", 16)


# --- known behaviour of the variants ---------------------------------------------------------


@pytest.fixture(scope="module")
def small_sweep() -> DepthSweepResult:
    options = DepthSweepOptions(depths=(1, 2, 4, 8, 16, 32), variants=ALL_VARIANTS, seq_len=8)
    return run_depth_sweep(small_spec(), options)


def test_plain_collapses_far_below_pre(small_sweep: DepthSweepResult) -> None:
    pre, plain = small_sweep.point(32, "pre"), small_sweep.point(32, "plain")
    assert plain.norm_ratio is not None and pre.norm_ratio is not None
    assert plain.norm_ratio < 0.1 * pre.norm_ratio
    assert "collapse" in plain.flags
    assert 0.5 < pre.norm_ratio < 2  # the residual stream keeps the input's scale
    assert "plain collapses by depth" in small_sweep.verdict


def test_post_ln_output_sits_at_sqrt_d(small_sweep: DepthSweepResult) -> None:
    # Unit-scale, zero-bias LayerNorm: every position's output has norm sqrt(d var/(var+eps)).
    for depth in small_sweep.depths:
        p = small_sweep.point(depth, "post")
        np.testing.assert_allclose([p.norm_min, p.norm_max], math.sqrt(32), rtol=1e-4)


def test_attention_only_plain_stack_collapses_rank() -> None:
    options = DepthSweepOptions(sublayer="attention", depths=(1, 32), variants=("plain",), seq_len=8)
    result = run_depth_sweep(small_spec(init_std=0.2), options)
    first, deep = result.point(1, "plain"), result.point(32, "plain")
    assert first.cosine is not None and deep.cosine is not None
    assert deep.cosine > 0.99 > first.cosine
    assert "rank_collapse" in deep.flags and "positions align" in result.verdict


def test_causal_only_for_decoders() -> None:
    options = DepthSweepOptions(depths=(1,), seq_len=4)
    assert run_depth_sweep(small_spec(), options).causal
    bert = load_spec("bert-base").replace(d_model=32, n_heads=4, d_ff=64)
    assert not run_depth_sweep(bert, options).causal


# --- the Jacobian gain -----------------------------------------------------------------------


def _ln(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + eps)


def _ln_jvp(x: np.ndarray, dx: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """d LN(x)[dx], exactly: dc/s - c mean(c dc)/s^3 with c = x - mean x, s = sqrt(var + eps)."""
    c = x - x.mean(-1, keepdims=True)
    s = np.sqrt((c * c).mean(-1, keepdims=True) + eps)
    dc = dx - dx.mean(-1, keepdims=True)
    return dc / s - c * (c * dc).mean(-1, keepdims=True) / s**3


def test_finite_difference_gain_matches_exact_jvp() -> None:
    seed, batch, n_pos, d, k, depth, scale = 3, 2, 5, 8, 3, 12, 0.4
    options = DepthSweepOptions(
        sublayer="linear", share_weights=True, overrides={"d_model": d}, seq_len=n_pos,
        batch=batch, weight_scale=scale, depths=(depth,), seed=seed, n_directions=k,
        variants=ALL_VARIANTS,
    )
    result = run_depth_sweep(None, options)
    rng = np.random.default_rng(seed)  # the sweep's documented order: W, X0, directions
    w = rng.normal(scale=scale, size=(d, d))
    x0 = rng.normal(size=(batch, n_pos, d))
    v = rng.normal(size=(k, batch, n_pos, d))
    steps = {  # (x, dx) -> (next x, J dx), forward-mode by hand
        "pre": lambda x, dx: (x + _ln(x) @ w, dx + _ln_jvp(x, dx) @ w),
        "plain": lambda x, dx: (_ln(x) @ w, _ln_jvp(x, dx) @ w),
        "post": lambda x, dx: (_ln(x + x @ w), _ln_jvp(x + x @ w, dx + dx @ w)),
        "residual-no-norm": lambda x, dx: (x + x @ w, dx + dx @ w),
    }
    for variant, step in steps.items():
        x, dx = np.broadcast_to(x0, v.shape).copy(), v.copy()
        for _ in range(depth):
            x, dx = step(x, dx)
        exact = (np.linalg.norm(dx, axis=(2, 3)) / np.linalg.norm(v, axis=(2, 3))).mean()
        np.testing.assert_allclose(result.point(depth, variant).gain, exact, rtol=1e-4)


def test_gain_does_not_depend_on_the_step() -> None:
    # A full block (attention, tanh GELU, LayerNorm): the default step against a 100x larger one.
    spec, base = small_spec(), DepthSweepOptions(depths=(4, 16), seq_len=6, variants=ALL_VARIANTS)
    fine = run_depth_sweep(spec, base)
    coarse = run_depth_sweep(spec, DepthSweepOptions(**{**base.__dict__, "fd_step": 1e-3}))
    for p in fine.points:
        np.testing.assert_allclose(p.gain, coarse.point(p.depth, p.variant).gain, rtol=1e-4)


# --- one pass vs separate runs ---------------------------------------------------------------


def test_one_pass_equals_separate_runs() -> None:
    spec, variants = small_spec(), ("pre", "post", "plain")
    sweep = run_depth_sweep(spec, DepthSweepOptions(depths=(1, 3, 6), variants=variants, seq_len=5))
    for depth in (3, 6):
        alone = run_depth_sweep(spec, DepthSweepOptions(depths=(depth,), variants=variants, seq_len=5))
        for variant in variants:
            assert alone.point(depth, variant) == sweep.point(depth, variant)


def test_stack_matches_the_engine_block() -> None:
    """pre and post equal the engine's own block_forward with that norm placement, run on the
    weights regenerated from the documented seeds: layer 0 and X0 from default_rng(seed), layer
    i from default_rng([seed, i])."""
    spec, seed, depth = small_spec(), 5, 3
    result = run_depth_sweep(spec, DepthSweepOptions(depths=(depth,), seq_len=6, seed=seed,
                                                     variants=("pre", "post")))
    rng = np.random.default_rng(seed)
    layers = [Float32Initializer(spec, rng, np.float64).block()]
    x0 = rng.normal(size=(1, 6, spec.d_model))
    layers += [Float32Initializer(spec, layer_rng(seed, i), np.float64).block() for i in range(1, depth)]
    for placement in ("pre", "post"):
        placed, x = spec.replace(norm_placement=placement), x0
        for weights in layers:
            x = block_forward(placed, weights, x, StackInput.over(x.shape[1], True))
        np.testing.assert_allclose(result.point(depth, placement).norm_mean,
                                   np.linalg.norm(x, axis=-1).mean(), rtol=1e-12)


@pytest.mark.parametrize(("name", "window"), [
    ("gpt2", None), ("bert-base", None), ("t5-small", None), ("llama-2-7b", None),
    ("mistral-7b", 3),
])
def test_packed_attention_equals_per_sequence_attention(name: str, window: int | None) -> None:
    """Many short sequences packed side by side with a block-diagonal mask give exactly what the
    engine gives each sequence on its own: causal or not, RoPE positions, GQA, T5 bias, a
    sliding window (3 of 7 positions)."""
    spec = load_spec(name).replace(d_model=32, n_heads=4, d_ff=64, n_kv_heads=2, d_head=8)
    if window is not None:
        spec = spec.replace(sliding_window=window)
    causal = spec.family == "decoder"
    weights = Initializer(spec, np.random.default_rng(1), np.float64).part("attn")
    x = np.random.default_rng(2).normal(size=(23, 7, 32))  # 23 sequences: the last pack is partial
    bias = t5_position_bias(spec, np.random.default_rng(3), 7, causal, np.dtype(np.float64))
    positions = np.arange(7)[None]  # (1, T)
    expected = attention(spec, weights, x, StackInput(causal, positions, positions,
                                                      position_bias=bias))
    packed = _Packing(causal, bias, np.dtype(np.float64), spec.sliding_window).attention(
        spec, weights, x)
    np.testing.assert_allclose(packed, expected, rtol=0, atol=1e-13)


def test_shared_weights_differ_from_independent_layers() -> None:
    base = DepthSweepOptions(depths=(4,), seq_len=5, variants=("pre",))
    shared = run_depth_sweep(small_spec(), DepthSweepOptions(**{**base.__dict__, "share_weights": True}))
    independent = run_depth_sweep(small_spec(), base)
    assert shared.point(4, "pre").norm_mean != independent.point(4, "pre").norm_mean


def test_progress_is_reported_per_layer() -> None:
    calls: list[tuple[int, int]] = []
    run_depth_sweep(None, DepthSweepOptions(sublayer="linear", depths=(2, 5)),
                    lambda done, total: calls.append((done, total)))
    assert calls == [(i, 5) for i in range(1, 6)]


# --- overflow, NaN and bad input -------------------------------------------------------------


def test_overflow_is_reported_not_raised() -> None:
    options = DepthSweepOptions(sublayer="linear", weight_scale=1e100, depths=(1, 2, 8),
                                variants=("post", "residual-no-norm"))
    with np.errstate(all="raise"):  # the sweep must not leak floating-point errors
        result = run_depth_sweep(None, options)
    assert result.point(1, "residual-no-norm").status == "ok"
    for depth in (2, 8):
        p = result.point(depth, "residual-no-norm")
        assert (p.status, p.norm_mean, p.gain) == ("overflow", None, None)
        assert result.point(depth, "post").status == "ok"  # the others carry on
    summary = result.variants[1]
    assert (summary.status, summary.failed_at_layer) == ("overflow", 2)
    assert "residual-no-norm explodes by depth 1" in result.verdict
    assert "overflows at layer 2" in result.verdict
    json.dumps(result.to_dict(), allow_nan=False)


def test_float32_overflows_sooner_than_float64() -> None:
    options = DepthSweepOptions(sublayer="linear", weight_scale=1000.0, depths=(64,),
                                variants=("residual-no-norm",))
    f32 = run_depth_sweep(None, DepthSweepOptions(**{**options.__dict__, "dtype": "float32"}))
    f64 = run_depth_sweep(None, options)
    assert f32.variants[0].failed_at_layer is not None and f64.variants[0].failed_at_layer is not None
    assert f32.variants[0].failed_at_layer < f64.variants[0].failed_at_layer


def test_nan_is_reported_from_its_layer_on() -> None:
    """A body that turns NaN at layer 3 (no overflow before it): status nan from depth 3 on."""
    calls = {"n": 0}

    def body(x: np.ndarray) -> np.ndarray:
        calls["n"] += 1
        return np.full_like(x, np.nan) if calls["n"] == 3 else 0.5 * x

    layer = (Sublayer(norm=lambda x: x, body=body),)
    x0 = np.random.default_rng(0).normal(size=(1, 4, 8))
    states = start_states(("plain",), x0, np.random.default_rng(1).normal(size=(2, 1, 4, 8)), 1e-5)
    record = run_stack(states, layer, lambda rng: layer, seed=0, depths=(2, 3, 5),
                       share_weights=True, step_rel=1e-5, limit=1e100)
    assert not isinstance(record.outcomes[(2, "plain")], str)
    assert record.outcomes[(3, "plain")] == record.outcomes[(5, "plain")] == "nan"
    assert record.failed == {"plain": ("nan", 3)} and calls["n"] == 3  # not propagated further


def test_health_tells_overflow_from_nan() -> None:
    ok, big = np.ones(4), np.array([1.0, 1e200])
    assert health([ok], limit=1e100) == "ok"
    assert health([ok, big], limit=1e100) == "overflow"
    assert health([np.array([np.inf, np.nan])], limit=1e100) == "overflow"
    assert health([np.array([1.0, np.nan])], limit=1e100) == "nan"


def test_importing_the_renderer_loads_no_plotting_library() -> None:
    code = ("import sys, tfcli.render.depth, tfcli.analysis.depth.sweep; "
            "print('plotext' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        (None, DepthSweepOptions(), "needs a SPEC"),
        (None, DepthSweepOptions(sublayer="linear", overrides={"n_heads": 2}), "only --d-model"),
        ("small", DepthSweepOptions(variants=("pre", "sideways")), "--variants"),
        ("small", DepthSweepOptions(depths=(0, 4)), "--depths"),
        ("small", DepthSweepOptions(sublayer="mlp"), "--sublayer"),
        ("small", DepthSweepOptions(dtype="float16"), "--dtype"),
        ("small", DepthSweepOptions(weight_scale=0.3), "--weight-scale"),
        ("small", DepthSweepOptions(overrides={"n_heads": 5}), "n_heads"),
        ("small", DepthSweepOptions(overrides={"d_ff": -1}), "d_ff"),
    ],
)
def test_bad_input(spec: str | None, options: DepthSweepOptions, message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        run_depth_sweep(small_spec() if spec else None, options)


def test_overrides_apply_and_none_means_not_given() -> None:
    options = DepthSweepOptions(depths=(1,), seq_len=4, overrides={"d_model": 48, "d_ff": None,
                                                                   "init_std": 0.05})
    result = run_depth_sweep(small_spec(), options)
    assert (result.d_model, result.init_std) == (48, 0.05)
    assert result.overrides == {"d_model": 48, "init_std": 0.05}


# --- schema ----------------------------------------------------------------------------------

TOP_LEVEL = {
    "spec": (str, type(None)), "sublayer": str, "causal": bool, "d_model": int, "seq_len": int,
    "batch": int, "seed": int, "dtype": str, "share_weights": bool,
    "weight_scale": (float, type(None)), "init_std": (float, type(None)), "n_directions": int,
    "fd_step": float, "overrides": dict, "depths": list, "input_norm": float, "thresholds": dict,
    "variants": list, "points": list, "verdict": str, "gradients": (dict, type(None)),
}
POINT = {
    "depth": int, "variant": str, "status": str, "norm_mean": (float, type(None)),
    "norm_min": (float, type(None)), "norm_max": (float, type(None)),
    "norm_ratio": (float, type(None)), "gain": (float, type(None)),
    "cosine": (float, type(None)), "flags": list,
}


def test_json_schema(small_sweep: DepthSweepResult) -> None:
    data = json.loads(json.dumps(small_sweep.to_dict(), allow_nan=False))
    assert list(data) == list(TOP_LEVEL)
    for key, kind in TOP_LEVEL.items():
        assert isinstance(data[key], kind), key
    assert data["spec"] == "gpt2" and data["causal"] is True
    assert set(data["thresholds"]) == {"collapse", "explosion", "rank_collapse"}
    assert [v["name"] for v in data["variants"]] == list(ALL_VARIANTS)
    assert all(set(v) == {"name", "status", "failed_at_layer"} for v in data["variants"])
    assert len(data["points"]) == len(data["depths"]) * len(ALL_VARIANTS)
    for point in data["points"]:
        assert list(point) == list(POINT)
        for key, kind in POINT.items():
            assert isinstance(point[key], kind), key


def test_csv_rows(small_sweep: DepthSweepResult) -> None:
    header, rows = small_sweep.csv_rows()
    assert header == ["depth", "variant", "status", "norm_mean", "norm_min", "norm_max",
                      "norm_ratio", "gain", "cosine", "flags"]
    assert len(rows) == len(small_sweep.depths) * len(ALL_VARIANTS)
    assert rows[0][:3] == [1, "pre", "ok"]


# --- rendering -------------------------------------------------------------------------------


def test_table_and_verdict_render(small_sweep: DepthSweepResult) -> None:
    console = Console(width=200, record=True)
    console.print(render_depth_sweep(small_sweep))
    text = console.export_text()
    assert "residual-no-norm" in text and "ratio" in text
    assert small_sweep.verdict.split(";")[0] in text.replace("\n", " ")
    assert "norm vs depth" in text and "\x1b[" not in text  # the chart, plain when recorded


def test_lesson_table_shows_the_lesson_figures() -> None:
    console = Console(width=120, record=True)
    console.print(render_depth_sweep(run_depth_sweep(None, LESSON), chart=False))
    text = console.export_text()
    assert "103.043" in text and "5.58357" in text  # the lesson prints 103.043 and 5.5836


def test_terminal_chart(small_sweep: DepthSweepResult) -> None:
    chart = terminal_chart(small_sweep, width=70, height=16, colorless=True)
    assert "norm vs depth" in chart and "depth" in chart
    assert len(chart.splitlines()) >= 16
    assert "\x1b[" not in chart
    assert "\x1b[" in terminal_chart(small_sweep, width=70, height=16)


def test_png_is_written(small_sweep: DepthSweepResult, tmp_path: Path) -> None:
    """matplotlib comes with the test extra, so this path always runs in CI (the message for a
    missing matplotlib is test_missing_matplotlib_message)."""
    target = tmp_path / "sweep.png"
    write_png(small_sweep, target)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.png"]


def test_missing_matplotlib_message(small_sweep: DepthSweepResult, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails, as when not installed
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(BadInputError) as info:
        write_png(small_sweep, tmp_path / "x.png")
    assert info.value.message == PLOT_NEEDS_MATPLOTLIB


class _Figure:
    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def savefig(self, out: object, format: str) -> None:  # noqa: A002 (matplotlib's name)
        out.write(b"\x89PNG half")  # type: ignore[attr-defined]
        if self.fail:
            raise RuntimeError("renderer died")


def test_png_write_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "chart.png"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        _save_atomically(_Figure(fail=True), target)
    assert target.read_bytes() == b"old"  # untouched, and no temporary left behind
    assert [p.name for p in tmp_path.iterdir()] == ["chart.png"]
    _save_atomically(_Figure(fail=False), target)
    assert target.read_bytes() == b"\x89PNG half"
    assert [p.name for p in tmp_path.iterdir()] == ["chart.png"]
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~_current_umask()


def test_png_into_missing_folder_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="cannot write"):
        _save_atomically(_Figure(fail=False), tmp_path / "nope" / "chart.png")


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

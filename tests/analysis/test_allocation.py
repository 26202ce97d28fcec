"""Resource guards: the real memory limit (MemAvailable, rlimits, cgroups) read from controlled
files, whole-command memory estimates, the chunked loss, and refusals before any work."""

from __future__ import annotations

import math
import resource
from pathlib import Path

import numpy as np
import pytest

from tfcli.analysis import allocation as memory
from tfcli.analysis.run import forward as run
from tfcli.analysis.generate.mode import GenerationMode
from tfcli.analysis.allocation import (LimitSources, MemoryEstimate, MemoryLimit, Workload,
                                   check_fits, generate_estimate, memory_limit, run_estimate)
from tfcli.spec.counts import kv_cache_bytes, total_parameters
from tfcli.core.errors import BadInputError
from tfcli.sources import load_spec

GB = 10**9


def _unlimited(kind: int) -> tuple[int, int]:
    return resource.RLIM_INFINITY, resource.RLIM_INFINITY


def _sources(tmp_path: Path, *, available_kb: int = 64 * 10**6, cgroup: str = "0::/\n",
             status: str = "VmSize:\t  100000 kB\nVmData:\t   50000 kB\n",
             getrlimit=_unlimited) -> LimitSources:
    (tmp_path / "meminfo").write_text(f"MemTotal: 999999999 kB\nMemAvailable: {available_kb} kB\n")
    (tmp_path / "status").write_text(status)
    (tmp_path / "cgroup").write_text(cgroup)
    (tmp_path / "sys").mkdir(exist_ok=True)
    return LimitSources(str(tmp_path / "meminfo"), str(tmp_path / "status"),
                        str(tmp_path / "cgroup"), str(tmp_path / "sys"), getrlimit)


# --- the limit ---------------------------------------------------------------------------------


def test_mem_available_alone(tmp_path: Path) -> None:
    assert memory_limit(_sources(tmp_path, available_kb=2_000_000)) == MemoryLimit(
        2_048_000_000, "MemAvailable")


def test_cgroup_v2_limit_less_usage_binds(tmp_path: Path) -> None:
    src = _sources(tmp_path)
    (tmp_path / "sys" / "memory.max").write_text("3000000000\n")
    (tmp_path / "sys" / "memory.current").write_text("1000000000\n")
    assert memory_limit(src) == MemoryLimit(2 * GB, "cgroup memory.max")


def test_cgroup_v2_max_means_no_limit(tmp_path: Path) -> None:
    src = _sources(tmp_path, available_kb=1_000_000)
    (tmp_path / "sys" / "memory.max").write_text("max\n")
    (tmp_path / "sys" / "memory.current").write_text("5\n")
    assert memory_limit(src).source == "MemAvailable"


def test_a_parent_cgroups_limit_binds_too(tmp_path: Path) -> None:
    src = _sources(tmp_path, cgroup="0::/job/step\n")
    own, parent = tmp_path / "sys" / "job" / "step", tmp_path / "sys" / "job"
    own.mkdir(parents=True)
    (own / "memory.max").write_text("max\n")
    (parent / "memory.max").write_text(str(5 * GB))
    (parent / "memory.current").write_text(str(4 * GB))
    assert memory_limit(src) == MemoryLimit(GB, "cgroup memory.max")


def test_cgroup_v1_limit(tmp_path: Path) -> None:
    src = _sources(tmp_path, cgroup="4:memory:/box\n0::/\n")
    box = tmp_path / "sys" / "memory" / "box"
    box.mkdir(parents=True)
    (box / "memory.limit_in_bytes").write_text(str(3 * GB))
    (box / "memory.usage_in_bytes").write_text(str(GB))
    (tmp_path / "sys" / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712")
    assert memory_limit(src) == MemoryLimit(2 * GB, "cgroup memory.limit_in_bytes")


def test_rlimit_as_less_mapped_size_binds(tmp_path: Path) -> None:
    def getrlimit(kind: int) -> tuple[int, int]:
        return (3 * GB, 3 * GB) if kind == resource.RLIMIT_AS else _unlimited(kind)

    src = _sources(tmp_path, status="VmSize:\t 1000000 kB\nVmData:\t 10 kB\n", getrlimit=getrlimit)
    assert memory_limit(src) == MemoryLimit(3 * GB - 1_024_000_000, "RLIMIT_AS soft limit")


@pytest.mark.parametrize("garbage", ["", "max", "-5", "1e9", "9" * 400, "\x00\xff"])
def test_garbage_cgroup_files_drop_out(tmp_path: Path, garbage: str) -> None:
    src = _sources(tmp_path, available_kb=1_000)
    (tmp_path / "sys" / "memory.max").write_text(garbage)
    assert memory_limit(src).source == "MemAvailable"


def test_this_machine_has_a_positive_limit() -> None:
    assert memory_limit().bytes > 0


# --- estimates and the check --------------------------------------------------------------------


def test_run_estimate_counts_logits_of_the_whole_batch() -> None:
    spec = load_spec("gpt2")
    estimate = run_estimate(spec, np.float32, Workload(batch=64, seq_len=1024, loss=True))
    parts = dict(estimate.parts)
    assert parts["weights"] == total_parameters(spec) * 4
    assert parts["logits"] == 64 * 1024 * 50257 * 4  # 13.2 GB: the 12.3 GiB
    assert parts["loss"] < 0.2 * GB  # computed in chunks, never a float64 copy of all logits
    assert estimate.total > 13 * GB


def test_generate_estimate_counts_cache_and_kept_logits() -> None:
    spec = load_spec("gpt2")
    cached = dict(generate_estimate(spec, np.float32, Workload(seq_len=10, new_tokens=100)).parts)
    assert cached["KV cache"] == kv_cache_bytes(spec, 110)
    assert cached["logits"] == 100 * 50257 * 4
    both_runs = Workload(seq_len=10, new_tokens=100, mode=GenerationMode.check)
    both = dict(generate_estimate(spec, np.float32, both_runs).parts)
    assert both["logits"] == 2 * cached["logits"]  # cached and uncached runs keep theirs
    assert both["activations"] > cached["activations"]  # uncached: the whole prefix each step


def test_check_fits_one_line_with_both_figures_and_the_source() -> None:
    gib = 2**30  # the guard says GiB, as `tfcli params` does
    estimate = MemoryEstimate("run of x", (("weights", 3 * gib), ("logits", 10 * gib)), "--batch")
    assert check_fits(estimate, MemoryLimit(13 * gib, "RLIMIT_AS soft limit")) == 13 * gib
    with pytest.raises(BadInputError) as err:
        check_fits(estimate, MemoryLimit(2 * gib, "cgroup memory.max"))
    message = err.value.message
    assert "\n" not in message
    assert message == ("run of x needs about 13.0 GiB (logits 10.0 GiB, weights 3 GiB), over the "
                       "2 GiB this process may use (cgroup memory.max); reduce --batch")


@pytest.mark.parametrize("kwargs, match", [
    ({"seq_len": 10**9}, "--seq-len 1,000,000,000 exceeds max_seq_len 1,024"),
    ({"batch": 10**12, "seq_len": 16}, "needs about"),
])
def test_run_plan_refuses_before_any_input_exists(monkeypatch, kwargs: dict, match: str) -> None:
    monkeypatch.setattr(np.random, "default_rng", lambda *a: pytest.fail("drew inputs"))
    options = {"text": None, "tokens": None, "target": None, "batch": 1, "seq_len": None} | kwargs
    with pytest.raises(BadInputError, match=match):
        check_fits(run.run_plan(load_spec("gpt2"), np.float32, **options))


def test_build_inputs_checks_length_before_drawing(monkeypatch) -> None:
    monkeypatch.setattr(run.np.random, "default_rng", lambda *a: pytest.fail("drew inputs"))
    with pytest.raises(BadInputError, match="exceeds max_seq_len"):
        run.build_inputs(load_spec("gpt2"), text=None, tokens=None, target=None, batch=1,
                         seq_len=10**9, seed=0, weights_dir=None)


def _direct(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """-log softmax(logits)[target] per position, in float64, all at once."""
    x = logits.astype(np.float64)
    log_p = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return -np.take_along_axis(log_p, targets[..., None], -1)[..., 0]


@pytest.mark.parametrize("chunk", [7, 64, 1 << 22])
def test_chunked_cross_entropy_equals_the_direct_formula(monkeypatch, chunk: int) -> None:
    monkeypatch.setattr(run, "LOSS_CHUNK_ELEMENTS", chunk)  # 7 < V: one row per chunk
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(3, 9, 11)).astype(np.float32) * 4
    targets = rng.integers(0, 11, (3, 9))
    where = rng.random((3, 9)) < 0.5
    picked = _direct(logits, targets)
    tol = 1e-12  # float64 sums of ~27 terms of size ~3: far above 27 ulps
    assert math.isclose(run.cross_entropy(logits, targets), picked.mean(), rel_tol=tol)
    assert math.isclose(run.cross_entropy(logits, targets, where), picked[where].mean(), rel_tol=tol)
    # teacher forcing passes a non-contiguous slice: it must not be copied whole, nor misread
    forced = run.cross_entropy(logits[:, :-1], targets[:, 1:])
    assert math.isclose(forced, _direct(logits[:, :-1], targets[:, 1:]).mean(), rel_tol=tol)


def test_loss_estimate_matches_the_chunk_size() -> None:
    assert memory.LOSS_CHUNK_ELEMENTS == run.LOSS_CHUNK_ELEMENTS


# --- depth-sweep -----------------------------------------------------------------------------


def _sweep(**kwargs):
    from tfcli.analysis.depth.sweep import DepthSweepOptions

    return DepthSweepOptions(**kwargs)


@pytest.mark.parametrize("spec_name, kwargs, match", [
    (None, {"sublayer": "linear", "depths": (10**8,)}, "--depths must be integers from 1 to 10,000"),
    (None, {"sublayer": "linear", "overrides": {"d_model": 200_000}, "depths": (1,), "seq_len": 1},
     "needs about 745.2 GiB"),
    ("gpt2", {"seq_len": 10**6}, "needs about"),  # memory is checked first
    ("gpt2", {"batch": 10**5}, "needs about"),
    ("gpt2", {"n_directions": 10**6}, "needs about"),
    ("gpt2", {"seq_len": 256, "batch": 4}, "FLOPs"),  # fits in 20 GB (4.9), but 2.06e13 FLOPs
    ("gpt2", {"depths": (10_000,)}, "over the limit of 2e\\+13"),
])
def test_depth_sweep_refuses_before_drawing(monkeypatch, spec_name, kwargs, match) -> None:
    from tfcli.analysis.depth import sweep as depth

    monkeypatch.setattr(depth.np.random, "default_rng", lambda *a: pytest.fail("drew"))
    monkeypatch.setattr(memory, "memory_limit", lambda sources=None: MemoryLimit(20 * GB, "test"))
    spec = load_spec(spec_name) if spec_name else None
    with pytest.raises(BadInputError, match=match) as err:
        depth.check_depth_sweep(spec, _sweep(**kwargs))
    assert "\n" not in err.value.message
    with pytest.raises(BadInputError, match=match):  # the library entry point checks too
        depth.run_depth_sweep(spec, _sweep(**kwargs))


def test_depth_sweep_size_counts_streams_and_layers() -> None:
    from tfcli.analysis.depth.size import sweep_size

    spec = load_spec("gpt2")
    o = _sweep(depths=(1, 8), variants=("pre", "post"), n_directions=2, seq_len=4, batch=3)
    size = sweep_size(spec, 768, o)
    n_seqs = 2 * (1 + 2 * 2) * 3  # variants x streams x batch
    assert dict(size.memory.parts)["streams"] == 5 * n_seqs * 4 * 768 * 8
    block = total_parameters(spec.with_layers(2)) - total_parameters(spec.with_layers(1))
    assert block == 7_087_872  # one GPT-2 block
    assert size.work >= 8 * 2 * block * n_seqs * 4 + 20 * 8 * block
    shared = sweep_size(spec, 768, _sweep(depths=(1, 8), variants=("pre", "post"), n_directions=2,
                                          seq_len=4, batch=3, share_weights=True))
    assert size.work - shared.work == 20 * 7 * block  # 7 fewer layers drawn


def test_default_sweeps_stay_allowed(monkeypatch) -> None:
    from tfcli.analysis.depth.sweep import check_depth_sweep

    monkeypatch.setattr(memory, "memory_limit", lambda sources=None: MemoryLimit(16 * GB, "test"))

    for name in ("gpt2", "llama-2-7b", "t5-small"):
        check_depth_sweep(load_spec(name), _sweep())  # the README's sweeps must not be refused
    check_depth_sweep(None, _sweep(sublayer="linear", depths=(10_000,), share_weights=True))


# --- trace: O(1) in layers ----------------------------------------------------------------------


def test_trace_folds_a_billion_layers_with_exact_totals() -> None:
    from tfcli.analysis.trace.build import build_trace

    spec = load_spec("llama-2-7b")
    one, two = (build_trace(spec.with_layers(n), seq_len=64) for n in (1, 2))
    deep = build_trace(spec.with_layers(10**9), seq_len=64)
    assert len(deep.rows) < 2 * len(two.rows)  # block 0 and one repeated group, not 1e9 blocks
    assert deep.total_params == total_parameters(spec.with_layers(10**9))
    per_block = two.total_flops - one.total_flops  # every block after the first is the same
    assert deep.total_flops == one.total_flops + (10**9 - 1) * per_block  # ints: exact
    assert isinstance(deep.total_flops, int)
    group = [r for r in deep.rows if r.path.startswith("decoder.1-999999999.")]
    assert group and all(r.repeat == 10**9 - 1 for r in group)
    assert [r.path for r in deep.fold(1)][:3] == ["embed", "decoder.0", "decoder.1-999999999"]
    assert deep.fold(1)[2].repeat == 10**9 - 1


@pytest.mark.parametrize("name", ["gpt2", "t5-small", "mixtral-8x7b"])
def test_folded_rows_expand_to_the_listed_ones(monkeypatch, name: str) -> None:
    from tfcli.analysis.trace import build as trace
    from tfcli.analysis.trace.rows import expand_rows

    spec = load_spec(name).with_layers(300)
    folded = trace.build_trace(spec, seq_len=5)
    monkeypatch.setattr(trace, "MAX_LISTED_BLOCKS", 10_000)
    listed = trace.build_trace(spec, seq_len=5)
    assert len(folded.rows) < len(listed.rows) // 100
    assert expand_rows(folded.rows) == list(listed.rows)
    for key in ("total_params", "total_flops", "total_act_bytes"):
        assert getattr(folded, key) == getattr(listed, key)


def test_execute_checks_every_block_of_a_folded_stack() -> None:
    from tfcli.analysis.trace.build import build_trace
    from tfcli.analysis.trace.check import execute_check

    spec = load_spec("lesson-tiny").replace(d_model=8, n_heads=2, d_ff=8).with_layers(300)
    report = build_trace(spec, seq_len=3)
    check = execute_check(spec, report)
    assert check.ok and check.layers == 300 and check.expected == check.observed > 300 * 10


@pytest.mark.parametrize("kwargs", [{"seq_len": 2**41}, {"batch": 10**400}])
def test_trace_bounds_sizes_whose_totals_would_leave_float_range(kwargs) -> None:
    from tfcli.analysis.trace.build import build_trace

    with pytest.raises(BadInputError, match="at most 2\\^40") as err:
        build_trace(load_spec("llama-2-7b"), **kwargs)
    assert len(err.value.message) < 120  # a 400-digit value is not echoed whole


def test_gb_gives_significant_digits_only() -> None:
    """Past a petabyte the figure is a float: digits beyond its precision must not print."""
    from tfcli.analysis.allocation import gb

    assert gb(275.9e9) == "257.0 GiB"  # GiB, as `tfcli params` prints memory
    assert gb(238_000) == "0.000222 GiB"
    assert gb(2_835_148_800 * 10**27) == "2.64e+27 GiB"

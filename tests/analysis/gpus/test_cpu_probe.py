"""The `cpu` entry's probes (tfcli.analysis.gpus.cpu_probe): the layer stack the bandwidth is read
over (shapes, memory order, whole layers), the width a spec's d_model maps to, and that `tfcli
perf --gpu cpu` measures at the spec's own width. Rates are only checked to be positive: they
are this machine's, not the test's."""

from __future__ import annotations

import numpy as np
import pytest

from tfcli.analysis.gpus import cpu_probe
from tfcli.analysis.gpus import catalog as gpus
from tfcli.analysis.perf.estimate import PerfOptions, build_perf_estimate
from tfcli.sources import load_spec


@pytest.mark.parametrize(("d_model", "width"), [(None, None), (32, 256), (768, 768),
                                                (2048, 2048), (8192, 2048)])
def test_a_d_model_maps_to_a_probe_width_within_bounds(d_model: int | None,
                                                       width: int | None) -> None:
    assert cpu_probe.probe_width(d_model) == width


def test_the_layer_stack_is_whole_layers_in_the_engines_layout() -> None:
    stack = cpu_probe._layer_stack(64, 5 * 4 * 12 * 64 * 64 + 100)  # five layers and a bit
    assert len(stack) == 5 * 4
    assert [m.shape for m in stack[:4]] == [(64, 192), (64, 64), (64, 256), (256, 64)]
    assert [m.flags["F_CONTIGUOUS"] and not m.flags["C_CONTIGUOUS"] for m in stack[:4]] == \
        [False, True, False, True]  # output and down projections stored transposed
    assert all(m.dtype == np.float32 for m in stack)
    assert len(cpu_probe._layer_stack(64, 1)) == 4  # never less than one layer


def test_the_probes_read_at_a_positive_rate_on_tiny_sizes() -> None:
    assert cpu_probe.measure_read_bandwidth(1 << 20, width=256) > 0
    assert cpu_probe.measure_read_bandwidth(1 << 20) > 0


def test_the_pattern_is_said_in_words() -> None:
    assert cpu_probe.bandwidth_pattern(None) == "float32 vector-matrix over 256 MiB"
    assert "width-768 layers in tfcli's layout over 256 MiB" in cpu_probe.bandwidth_pattern(768)


def test_perf_on_cpu_reads_the_bandwidth_at_the_specs_width(
        monkeypatch: pytest.MonkeyPatch) -> None:
    widths: list[int | None] = []

    def bandwidth(n_bytes: int = 0, width: int | None = None) -> float:
        widths.append(width)
        return 20e9

    gpus.cpu_entry.cache_clear()
    monkeypatch.setattr(gpus, "measure_gemm_flops", lambda: 100e9)
    monkeypatch.setattr(gpus, "measure_read_bandwidth", bandwidth)
    monkeypatch.setattr(gpus, "measure_op_seconds", lambda: 5e-6)
    try:
        gpt2 = build_perf_estimate(load_spec("gpt2").with_layers(2),
                                   PerfOptions(gpu="cpu", seq_len=32))
        build_perf_estimate(load_spec("gpt2").with_layers(1), PerfOptions(gpu="cpu", seq_len=32))
        listed = gpus.find_gpu("cpu")  # `tfcli gpus --measure-cpu`: no spec, the wide product
    finally:
        gpus.cpu_entry.cache_clear()
    assert widths == [768, None]  # the second gpt2 reused the first's measurement
    assert "width-768 layers" in gpt2.accelerator.note
    assert "vector-matrix over 256 MiB" in listed.note
    assert gpt2.decode.memory_seconds == pytest.approx(
        (gpt2.decode.weight_bytes + gpt2.decode.kv_bytes) / 20e9)

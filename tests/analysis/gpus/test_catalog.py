"""The accelerator catalog: names and aliases, did-you-mean, dense peaks per dtype, and the
measured cpu entry (its measuring functions on tiny sizes, its note from given figures)."""

from __future__ import annotations

import pytest

from tfcli.analysis.gpus import catalog as gpus
from tfcli.analysis.gpus.catalog import CATALOG, GiB, TERA, find_gpu, gpu_names
from tfcli.core.errors import BadInputError


@pytest.mark.parametrize(("asked", "name"), [
    ("H100", "H100 SXM"), ("h100-pcie", "H100 PCIe"), ("a100-80gb", "A100 SXM 80GB"),
    ("A100 PCIe 40GB", "A100 PCIe 40GB"), ("  mi300x ", "MI300X"), ("RTX_4090", "RTX 4090"),
    ("tpu-v5e", "TPU v5e"),
])
def test_names_and_aliases_any_case(asked: str, name: str) -> None:
    assert find_gpu(asked).name == name


def test_every_name_is_unique_and_every_entry_cites_a_source() -> None:
    names = gpu_names()
    assert len(names) == len(set(names))
    for entry in CATALOG:
        assert entry.source.startswith("https://"), entry.name
        assert entry.memory_bytes >= 16 * GiB and entry.bandwidth >= 0.3 * TERA
        assert entry.bf16_tflops or entry.fp16_tflops


def test_an_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(BadInputError, match=r"unknown accelerator 'h10'; did you mean 'h100'\?"):
        find_gpu("h10")
    with pytest.raises(BadInputError, match="`tfcli gpus` lists them") as info:
        find_gpu("zzzz")
    assert "did you mean" not in info.value.message


def test_a_hostile_name_is_cut_in_the_message() -> None:
    with pytest.raises(BadInputError) as info:
        find_gpu("x" * 10_000)
    assert len(info.value.message) < 200


def test_peaks_are_dense_tflops_per_dtype() -> None:
    h100 = find_gpu("h100")
    assert h100.peak_flops("bfloat16") == pytest.approx(989.4e12)
    assert h100.peak_flops("float8") == pytest.approx(2 * h100.peak_flops("float16"), rel=1e-3)
    assert h100.peak_flops("float32") == pytest.approx(67e12)


def test_a_dtype_the_chip_lacks_is_bad_input() -> None:
    with pytest.raises(BadInputError, match="A100 SXM 80GB has no float8 figure.*bfloat16, float16"):
        find_gpu("a100").peak_flops("float8")
    with pytest.raises(BadInputError, match="T4 has no bfloat16"):
        find_gpu("t4").peak_flops("bfloat16")
    with pytest.raises(BadInputError, match="no peak FLOP/s for dtype 'int4'"):
        find_gpu("t4").peak_flops("int4")


def test_the_measuring_functions_give_positive_rates_on_tiny_sizes() -> None:
    assert gpus.measure_gemm_flops(64) > 0
    assert gpus.measure_read_bandwidth(1 << 20) > 0


def test_the_cpu_entry_says_it_was_measured_and_how(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus.cpu_entry.cache_clear()
    monkeypatch.setattr(gpus, "measure_gemm_flops", lambda: 80e9)
    monkeypatch.setattr(gpus, "measure_read_bandwidth", lambda **_: 12e9)
    try:
        cpu = find_gpu("CPU")
        assert find_gpu("cpu") is cpu  # measured once per process
    finally:
        gpus.cpu_entry.cache_clear()
    assert cpu.peak_flops("float32") == pytest.approx(80e9) and cpu.bandwidth == 12e9
    assert cpu.source == "measured"
    for text in ("measured in this process", "(2048, 2048) matmul 80.0 GFLOP/s",
                 "vector-matrix over 256 MiB 12.0 GB/s", "load average"):
        assert text in cpu.note
    with pytest.raises(BadInputError, match="cpu has no bfloat16"):
        cpu.peak_flops("bfloat16")

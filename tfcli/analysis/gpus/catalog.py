"""The accelerator catalog behind `tfcli gpus`, `tfcli memory --gpu` and `tfcli perf --gpu`.

One frozen entry per accelerator, every figure copied from the vendor's spec sheet named in its
`source` (one URL per entry). Conventions, the same for every entry:
- TFLOP/s are DENSE peaks: sheets print the 2:4-sparsity figure first ("1,979 TFLOPS*"), which is
  twice what a dense matmul can reach; we store half of it, as the sheets' footnotes say.
- fp32 is the non-tensor (CUDA-core / vector) FP32 peak: PyTorch runs float32 matmuls in FP32,
  not TF32, unless told to (torch.backends.cuda.matmul.allow_tf32 is False by default).
- Consumer GeForce cards (RTX 3090 / 4090) run tensor cores at half rate with an FP32 accumulator;
  we store the FP32-accumulate figure, the one mixed-precision training uses.
- None: the chip has no such datapath (V100 and T4 have no bf16, nothing before Hopper / Ada /
  CDNA3 has fp8) or the sheet gives no figure (TPU v5e's fp32).
- memory_bytes: the sheet's "80GB" taken as GiB (80 * 2**30): HBM and GDDR parts are binary-sized,
  and nvidia-smi shows 81920 MiB for an A100 80GB. Drivers, ECC and the CUDA context take a little
  of it; the planners say what they leave free.
- bandwidth: decimal bytes per second, as the sheets print them (3.35 TB/s = 3.35e12 B/s).

Apple M-series chips are left out: Apple publishes memory bandwidth but no TFLOP/s per dtype.
The `cpu` entry is not in the table: it is measured on this machine when asked for (cpu_entry).
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass

from tfcli.analysis.gpus.cpu_probe import (GEMM_SIZE, REPEATS, STREAM_REPEATS, bandwidth_pattern,
                                      measure_gemm_flops, measure_op_seconds,
                                      measure_read_bandwidth, probe_width)
from tfcli.core.errors import BadInputError

GiB = 2**30
TERA = 1e12


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's memory, dense peak TFLOP/s per dtype and memory bandwidth."""

    name: str
    aliases: tuple[str, ...]
    vendor: str
    memory_bytes: int
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    fp32_tflops: float | None
    bandwidth: float  # bytes per second
    source: str  # the vendor spec sheet the figures come from
    note: str = ""  # how the figures were read (or measured, for cpu)
    # the fixed cost of one op beyond its FLOPs and bytes: measured for cpu (the engine's
    # Python and NumPy dispatch); 0 for the catalog, whose sheets give no kernel-launch figure
    op_seconds: float = 0.0

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s for matmuls in `dtype` (bfloat16, float16, float8, float32)."""
        field = _DTYPE_FIELDS.get(dtype)
        if field is None:
            raise BadInputError(f"no peak FLOP/s for dtype '{dtype}': use one of "
                                f"{', '.join(_DTYPE_FIELDS)}")
        tflops = getattr(self, field)
        if tflops is None:
            where = "measured" if self.source == "measured" else "on its spec sheet"
            raise BadInputError(f"{self.name} has no {dtype} figure {where} "
                                f"(available: {', '.join(self.dtypes())})")
        return tflops * TERA

    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this entry has a peak for."""
        return tuple(d for d, f in _DTYPE_FIELDS.items() if getattr(self, f) is not None)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "aliases": list(self.aliases), "vendor": self.vendor,
                "memory_bytes": self.memory_bytes, "bf16_tflops": self.bf16_tflops,
                "fp16_tflops": self.fp16_tflops, "fp8_tflops": self.fp8_tflops,
                "fp32_tflops": self.fp32_tflops, "bandwidth_bytes_per_s": self.bandwidth,
                "source": self.source, "note": self.note, "op_seconds": self.op_seconds}


_DTYPE_FIELDS = {"bfloat16": "bf16_tflops", "float16": "fp16_tflops", "float8": "fp8_tflops",
                 "float32": "fp32_tflops"}

_NV_H100 = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
_NV_A100 = ("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
            "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_NV_ADA = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_NV_GA102 = ("https://www.nvidia.com/content/PDF/"
             "nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf")


def _gpu(name: str, aliases: tuple[str, ...], vendor: str, memory_gb: float,
         bf16: float | None, fp16: float | None, fp8: float | None, fp32: float | None,
         tb_per_s: float, source: str, note: str = "") -> Accelerator:
    return Accelerator(name, aliases, vendor, round(memory_gb * GiB), bf16, fp16, fp8, fp32,
                       float(round(tb_per_s * TERA)), source, note)  # round: 2.039e12, not ...0002


# name, aliases, vendor, memory (GB), dense bf16 / fp16 / fp8 / fp32 TFLOP/s, TB/s, source
CATALOG: tuple[Accelerator, ...] = (
    _gpu("H100 SXM", ("h100", "h100-sxm", "h100-sxm5", "h100-80gb"), "NVIDIA", 80,
         989.4, 989.4, 1978.9, 67, 3.35, _NV_H100),
    _gpu("H100 PCIe", ("h100-pcie",), "NVIDIA", 80, 756.5, 756.5, 1513, 51, 2.0, _NV_H100),
    _gpu("H200", ("h200", "h200-sxm", "h200-141gb"), "NVIDIA", 141, 989.4, 989.4, 1978.9, 67,
         4.8, "https://www.nvidia.com/en-us/data-center/h200/"),
    _gpu("A100 SXM 80GB", ("a100", "a100-80gb", "a100-sxm", "a100-sxm-80gb"), "NVIDIA", 80,
         312, 312, None, 19.5, 2.039, _NV_A100),
    _gpu("A100 SXM 40GB", ("a100-40gb", "a100-sxm-40gb"), "NVIDIA", 40, 312, 312, None, 19.5,
         1.555, _NV_A100),
    _gpu("A100 PCIe 80GB", ("a100-pcie", "a100-pcie-80gb"), "NVIDIA", 80, 312, 312, None, 19.5,
         1.935, _NV_A100),
    _gpu("A100 PCIe 40GB", ("a100-pcie-40gb",), "NVIDIA", 40, 312, 312, None, 19.5, 1.555,
         _NV_A100),
    _gpu("L40S", ("l40s",), "NVIDIA", 48, 362.05, 362.05, 733, 91.6, 0.864,
         "https://www.nvidia.com/en-us/data-center/l40s/"),
    _gpu("L4", ("l4",), "NVIDIA", 24, 121, 121, 242.5, 30.3, 0.300,
         "https://www.nvidia.com/en-us/data-center/l4/"),
    _gpu("A10", ("a10",), "NVIDIA", 24, 125, 125, None, 31.2, 0.600,
         "https://www.nvidia.com/en-us/data-center/products/a10-gpu/"),
    _gpu("A10G", ("a10g",), "NVIDIA", 24, 70, 70, None, 35, 0.600,
         "https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/",
         "AWS's G5 variant: NVIDIA publishes no A10G sheet; figures from this comparison"),
    _gpu("T4", ("t4",), "NVIDIA", 16, None, 65, None, 8.1, 0.320,
         "https://www.nvidia.com/en-us/data-center/tesla-t4/", "Turing: fp16 tensor cores, no bf16"),
    _gpu("V100 SXM2", ("v100", "v100-sxm2", "v100-32gb"), "NVIDIA", 32, None, 125, None, 15.7,
         0.900, "https://images.nvidia.com/content/technologies/volta/pdf/"
         "volta-v100-datasheet-update-us-1165301-r5.pdf", "Volta: fp16 tensor cores, no bf16"),
    _gpu("RTX 4090", ("rtx4090", "rtx-4090", "4090"), "NVIDIA", 24, 165.2, 165.2, 330.3, 82.6,
         1.008, _NV_ADA, "GeForce: tensor figures with FP32 accumulate (half the FP16-accumulate rate)"),
    _gpu("RTX 3090", ("rtx3090", "rtx-3090", "3090"), "NVIDIA", 24, 71, 71, None, 35.6, 0.936,
         _NV_GA102, "GeForce: tensor figures with FP32 accumulate (half the FP16-accumulate rate)"),
    _gpu("RTX 6000 Ada", ("rtx6000-ada", "rtx-6000-ada", "rtx6000"), "NVIDIA", 48, 364.2, 364.2,
         728.5, 91.1, 0.960, _NV_ADA),
    _gpu("MI300X", ("mi300x", "mi300"), "AMD", 192, 1307.4, 1307.4, 2614.9, 163.4, 5.3,
         "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"),
    _gpu("MI250X", ("mi250x", "mi250"), "AMD", 128, 383, 383, None, 47.9, 3.2768,
         "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html",
         "two dies in one package, figures for the whole package; fp32 is the vector peak"),
    _gpu("TPU v5e", ("tpu-v5e", "v5e", "tpuv5e"), "Google", 16, 197, None, None, None, 0.819,
         "https://cloud.google.com/tpu/docs/v5e", "per chip; bf16 only (int8 394 TOP/s)"),
)

CPU_NAME = "cpu"


def _keys(entry: Accelerator) -> tuple[str, ...]:
    """The entry's name and aliases as find_gpu compares them, each once."""
    return tuple(dict.fromkeys([_norm(entry.name), *map(_norm, entry.aliases)]))


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "-").replace("_", "-")


def gpu_names() -> tuple[str, ...]:
    """Every name and alias find_gpu takes, cpu included."""
    return tuple(k for e in CATALOG for k in _keys(e)) + (CPU_NAME,)


def find_gpu(name: str, width: int | None = None, rates: bool = True) -> Accelerator:
    """The entry named `name` (case-insensitive, spaces or dashes, any alias); `cpu` is
    measured here, its bandwidth over layers of `width` (a spec's d_model) when given, or with
    rates=False (a caller that reads only the memory) not at all. A typo is one BadInputError
    with the closest name."""
    key = _norm(name)
    if key == CPU_NAME:
        return cpu_entry(probe_width(width)) if rates else cpu_memory_entry()
    for entry in CATALOG:
        if key in _keys(entry):
            return entry
    raise BadInputError(f"--gpu: unknown accelerator '{name[:40]}'{_suggest(key[:40])} "
                        f"(`tfcli gpus` lists them)")


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, gpu_names(), n=1, cutoff=0.5)
    return f"; did you mean '{close[0]}'?" if close else ""


@functools.lru_cache(maxsize=4)
def cpu_entry(width: int | None = None) -> Accelerator:
    """This machine's CPU as an accelerator, measured once per process and width (about a
    second): the float32 GEMM peak NumPy's BLAS reaches, the bandwidth a decode step's products
    read (`width`: over transformer layers of that width in tfcli's layout, cpu_probe.py; None:
    one wide vector-matrix product) and tfcli's engine's fixed cost per op."""
    import os

    gemm = measure_gemm_flops()
    bandwidth = measure_read_bandwidth(width=width)
    op_seconds = measure_op_seconds()
    note = (f"measured in this process: float32 ({GEMM_SIZE}, {GEMM_SIZE}) matmul "
            f"{gemm / 1e9:.1f} GFLOP/s, {bandwidth_pattern(width)} {bandwidth / 1e9:.1f} GB/s "
            f"(medians of {REPEATS} and {STREAM_REPEATS}), engine cost per op "
            f"{op_seconds * 1e6:.1f} us (a tiny model's decode step / its ops); "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    return Accelerator(CPU_NAME, (), "this machine", _physical_memory(), None, None, None,
                       gemm / TERA, bandwidth, "measured", note, op_seconds)


def cpu_memory_entry() -> Accelerator:
    """This machine's memory as an accelerator, nothing timed: `tfcli memory --gpu cpu` reads
    only the size, and measuring the rates takes a second and the engine. Its rates are absent
    (bandwidth 0, no peak): a roofline must ask for cpu_entry instead."""
    return Accelerator(CPU_NAME, (), "this machine", _physical_memory(), None, None, None, None,
                       0.0, "measured", "physical memory only: no rate was measured")


def _physical_memory() -> int:
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # not every platform names them
        return 0


@dataclass(frozen=True)
class GpuList:
    """`tfcli gpus`: the catalog, and the measured cpu entry when asked for."""

    entries: tuple[Accelerator, ...]

    def to_dict(self) -> dict[str, object]:
        return {"accelerators": [e.to_dict() for e in self.entries]}

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        rows = [e.to_dict() for e in self.entries]
        header = list(rows[0]) if rows else []
        return header, [[";".join(v) if isinstance(v, list) else v for v in r.values()]
                         for r in rows]


def build_gpu_list(measure_cpu: bool = False) -> GpuList:
    """Every catalog entry, then (with measure_cpu) this machine's measured cpu entry."""
    return GpuList(CATALOG + ((cpu_entry(),) if measure_cpu else ()))

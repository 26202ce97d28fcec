"""The GGUF readers of 2025 families on files written here: qwen3moe's and olmoe's experts read
from their stacked tensors, and what a reader does not model or cannot bound (shared experts,
a per-layer list of billions) refused in one line naming the key or tensor (exit 2). Their
parity with transformers: tests/parity/test_gguf_families_parity.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, write_gguf
from tests.cli.guarded import run_in_memory
from tfcli.checkpoints.gguf.spec import spec_from_gguf_file

EXPERTS, USED, FF = 4, 2, 8


def _moe_file(path: Path, arch: str, extra_meta: dict | None = None,
              extra_tensors: dict | None = None) -> Path:
    rng = np.random.default_rng(0)
    tensors = {n: t for n, t in llama_tensors().items() if ".ffn_" not in n or "norm" in n}
    for i in range(2):
        tensors |= {f"blk.{i}.ffn_gate_inp.weight": rng.standard_normal((EXPERTS, 16)),
                    f"blk.{i}.ffn_gate_exps.weight": rng.standard_normal((EXPERTS, FF, 16)),
                    f"blk.{i}.ffn_up_exps.weight": rng.standard_normal((EXPERTS, FF, 16)),
                    f"blk.{i}.ffn_down_exps.weight": rng.standard_normal((EXPERTS, 16, FF))}
    tensors = {n: np.asarray(t, dtype=np.float32) for n, t in tensors.items()}
    meta = {k.replace("llama.", f"{arch}."): v for k, v in llama_metadata().items()}
    meta |= {f"{arch}.expert_count": EXPERTS, f"{arch}.expert_used_count": USED,
             f"{arch}.expert_feed_forward_length": FF}
    return write_gguf(path, arch, meta | (extra_meta or {}), tensors | (extra_tensors or {}))


@pytest.mark.parametrize(("arch", "renormalised"), [("qwen3moe", True), ("olmoe", False)])
def test_experts_are_read(tmp_path: Path, arch: str, renormalised: bool) -> None:
    spec = spec_from_gguf_file(str(_moe_file(tmp_path / "m.gguf", arch)))
    assert (spec.n_experts, spec.experts_per_token, spec.norm_topk_prob, spec.expert_d_ff) == \
        (EXPERTS, USED, renormalised, FF)
    code, out, err = run_in_memory("params", str(tmp_path / "m.gguf"))
    assert code == 0 and "equal" in out, (out, err)


def _refused(path: Path, named: str) -> None:
    code, _, err = run_in_memory("params", str(path))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert named in err, err


def test_a_bad_renormalisation_flag_is_named(tmp_path: Path) -> None:
    path = _moe_file(tmp_path / "m.gguf", "olmoe", {"olmoe.expert_weights_norm": 3})
    _refused(path, "'olmoe.expert_weights_norm': expected a boolean")


def test_shared_experts_are_refused(tmp_path: Path) -> None:
    shared = {"blk.0.ffn_up_shexp.weight": np.zeros((FF, 16), dtype=np.float32)}
    _refused(_moe_file(tmp_path / "m.gguf", "qwen3moe", extra_tensors=shared),
             "'blk.0.ffn_up_shexp.weight' (shared experts) is not supported")


def test_experts_in_a_dense_architecture_are_refused(tmp_path: Path) -> None:
    path = _moe_file(tmp_path / "m.gguf", "llama")
    _refused(path, "'llama.expert_count': mixture-of-experts GGUF files of architecture "
                   "'llama' are not supported")


@pytest.mark.parametrize(("layers", "period"), [(2**31 - 1, 4), (2, 3)])
def test_cohere2_layer_lists_are_bounded(tmp_path: Path, layers: int, period: int) -> None:
    """A hostile block_count or window pattern would become a per-layer list: refused first."""
    meta = {k.replace("llama.", "cohere2."): v for k, v in llama_metadata().items()
            if "rms_epsilon" not in k}
    meta |= {"cohere2.block_count": layers, "cohere2.attention.sliding_window_pattern": period,
             "cohere2.attention.sliding_window": 4, "cohere2.attention.layer_norm_epsilon": 1e-5}
    path = write_gguf(tmp_path / "c.gguf", "cohere2", meta, llama_tensors())
    _refused(path, "'cohere2.attention.sliding_window_pattern'")


def test_a_rope_freqs_table_is_read_as_its_divisors(tmp_path: Path) -> None:
    """llama.cpp's Llama 3.1 RoPE table: one divisor per rotated pair, at every position."""
    table = np.array([1.0, 2.0], dtype=np.float32)  # d_head 4: two pairs
    path = write_gguf(tmp_path / "l.gguf", "llama", llama_metadata(),
                      llama_tensors() | {"rope_freqs.weight": table})
    scaling = spec_from_gguf_file(str(path)).rope_scaling
    assert scaling is not None and scaling.type == "longrope"
    assert scaling.short_factor == scaling.long_factor == [1.0, 2.0]
    code, out, err = run_in_memory("params", str(path))
    assert code == 0 and "equal" in out, (out, err)  # the table is no parameter


@pytest.mark.parametrize(("table", "named"), [
    (np.ones(3, dtype=np.float32), "must be F32 of shape (2,)"),
    (np.ones(2, dtype=np.float16), "must be F32 of shape (2,)"),
    (np.array([1.0, np.nan], dtype=np.float32), "not a positive finite number"),
    (np.array([1.0, -2.0], dtype=np.float32), "not a positive finite number"),
])
def test_a_bad_rope_freqs_table_is_named(tmp_path: Path, table: np.ndarray, named: str) -> None:
    path = write_gguf(tmp_path / "l.gguf", "llama", llama_metadata(),
                      llama_tensors() | {"rope_freqs.weight": table})
    _refused(path, named)

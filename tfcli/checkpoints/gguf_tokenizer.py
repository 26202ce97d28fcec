"""A tokenizer built from a GGUF file's metadata (it carries no tokenizer.json), through the
optional `tokenizers` package.

Byte-level BPE (`tokenizer.ggml.model` "gpt2": SmolLM, Llama 3, Qwen 2/3, GPT-2) is rebuilt
as transformers builds it from the same file (integrations/gguf/gguf_tokenizer_mapping.py):
the vocabulary and merges as stored, GPT-2's byte-level pre-tokenizer - or the split regex
that the file's `tokenizer.ggml.pre` names - control tokens as special tokens and
user-defined ones as added tokens, so both give the same ids for the same text.
Sentencepiece vocabularies (`llama`: Llama 2, Gemma) are not built yet and are refused by name.
"""

from __future__ import annotations

from typing import Any

from tfcli.checkpoints.gguf_file import GGUFFile, read_gguf
from tfcli.errors import BadInputError

TOKENIZER_KEYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type")
CONTROL, USER_DEFINED = 3, 4  # llama.cpp token types

_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# tokenizer.ggml.pre -> the split regex its merges were learned with (others: GPT-2's own)
PRE_TOKENIZER_SPLITS = {
    "llama3": _LLAMA3_SPLIT, "llama-v3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT,
    "smaug-bpe": _LLAMA3_SPLIT, "dbrx": _LLAMA3_SPLIT, "qwen2": _QWEN2_SPLIT,
    "deepseek-r1-qwen": _QWEN2_SPLIT,
}


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (the alphabet of byte-level vocabularies)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


def _strings(gguf: GGUFFile, key: str) -> list[str]:
    values = gguf.metadata.get(key)
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise gguf.error(f"metadata '{key}' must be a list of strings to build its tokenizer")
    return values


def _byte_level(gguf: GGUFFile) -> Any:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    tokens = _strings(gguf, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in _strings(gguf, "tokenizer.ggml.merges")]
    spelling = bytes_to_unicode()
    alphabet = set(spelling.values())
    vocab = {t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8")): i
             for i, t in enumerate(tokens)}
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, dropout=None, continuing_subword_prefix="",
                        end_of_word_suffix="", fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    types = gguf.metadata.get("tokenizer.ggml.token_type")
    types = types if isinstance(types, list) else []
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t, kind in zip(tokens, types)
                            if kind == CONTROL and set(t) <= alphabet])
    tok.add_tokens([AddedToken(t, normalized=False, special=False)
                    for t, kind in zip(tokens, types) if kind == USER_DEFINED and t in vocab])
    split = PRE_TOKENIZER_SPLITS.get(str(gguf.metadata.get("tokenizer.ggml.pre")))
    if split is not None:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    return tok


def gguf_tokenizer(path: str) -> Any:
    """A `tokenizers.Tokenizer` for the GGUF file at `path`."""
    gguf = read_gguf(path, keep=TOKENIZER_KEYS)
    model = gguf.metadata.get("tokenizer.ggml.model")
    if model != "gpt2":
        raise BadInputError(f"{path}: a tokenizer of type {model!r} (tokenizer.ggml.model) is not "
                            "supported yet (only byte-level BPE, 'gpt2'); pass --tokens instead")
    try:
        return _byte_level(gguf)
    except BadInputError:
        raise
    except Exception as exc:  # `tokenizers` raises bare Exceptions for a malformed vocabulary
        raise gguf.error(f"cannot build its tokenizer: {str(exc)[:200]}") from None

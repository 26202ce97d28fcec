"""A tokenizer built from a GGUF file's metadata (it carries no tokenizer.json), through the
optional `tokenizers` package.

Byte-level BPE (`tokenizer.ggml.model` "gpt2": SmolLM, Llama 3, Qwen 2/3, GPT-2) is rebuilt
as transformers builds it from the same file (integrations/gguf/gguf_tokenizer_mapping.py):
the vocabulary and merges as stored, GPT-2's byte-level pre-tokenizer - or the split regex
that the file's `tokenizer.ggml.pre` names - control tokens as special tokens and
user-defined ones as added tokens, so both give the same ids for the same text.
Gemma's sentencepiece vocabulary (`llama` in a gemma / gemma2 / gemma3 file) is rebuilt as
transformers' GemmaTokenizer: BPE with byte fallback over merges recovered from the token
order. Other sentencepiece vocabularies (Llama 2) are not built yet and are refused by name.
"""

from __future__ import annotations

from typing import Any

from tfcli.checkpoints.gguf_file import GGUFFile, read_gguf
from tfcli.errors import BadInputError

TOKENIZER_KEYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type")
GEMMA_ARCHITECTURES = frozenset({"gemma", "gemma2", "gemma3"})
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
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers
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
    _special_tokens(tok, gguf, tokens, alphabet)
    split = PRE_TOKENIZER_SPLITS.get(str(gguf.metadata.get("tokenizer.ggml.pre")))
    if split is not None:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    return tok


def _special_tokens(tok: Any, gguf: GGUFFile, tokens: list[str], alphabet: set[str] | None) -> None:
    """Control tokens as special tokens, user-defined ones as added tokens (llama.cpp matches
    both whole in the text); a byte-level control token outside the byte alphabet is a
    llama.cpp mislabel and is skipped, as transformers does."""
    from tokenizers import AddedToken

    types = gguf.metadata.get("tokenizer.ggml.token_type")
    types = types if isinstance(types, list) else []
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t, kind in zip(tokens, types)
                            if kind == CONTROL and (alphabet is None or set(t) <= alphabet)])
    vocab = tok.get_vocab()
    tok.add_tokens([AddedToken(t, normalized=False, special=False)
                    for t, kind in zip(tokens, types) if kind == USER_DEFINED and t in vocab])


def merges_from_order(vocab: dict[str, int]) -> list[tuple[str, str]]:
    """BPE merges implied by a vocabulary whose order is its merge order (Gemma's GGUF lists
    no merges): every split of a token into two known pieces, best (earliest) token first,
    as transformers' generate_merges does with scores -index."""
    found = []
    for token, index in vocab.items():
        local = [(token[:k], token[k:]) for k in range(1, len(token))
                 if token[:k] in vocab and token[k:] in vocab]
        local.sort(key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))
        found += [(left, right, -index) for left, right in local]
    found.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(left, right) for left, right, _ in found]


def _gemma(gguf: GGUFFile) -> Any:
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import BPE

    # a token of spaces alone is stored as real spaces; the tokenizer looks it up as U+2581s
    tokens = ["\u2581" * len(t) if " " in t and not t.strip() else t
              for t in _strings(gguf, "tokenizer.ggml.tokens")]
    vocab = {t: i for i, t in reversed(list(enumerate(tokens)))}  # the first of duplicates
    unk = _token(gguf, tokens, "tokenizer.ggml.unknown_token_id") or "<unk>"
    tok = Tokenizer(BPE(vocab=vocab, merges=merges_from_order(vocab), fuse_unk=True,
                        unk_token=unk, dropout=None, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                     decoders.Fuse()])
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    _special_tokens(tok, gguf, tokens, None)
    bos = _token(gguf, tokens, "tokenizer.ggml.bos_token_id")
    if bos is not None and gguf.metadata.get("tokenizer.ggml.add_bos_token", True) is True:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 $B:1",
            special_tokens=[(bos, tokens.index(bos))])
    return tok


def _token(gguf: GGUFFile, tokens: list[str], key: str) -> str | None:
    index = gguf.metadata.get(key)
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(tokens):
        return tokens[index]
    return None


def gguf_tokenizer(path: str) -> Any:
    """A `tokenizers.Tokenizer` for the GGUF file at `path`."""
    gguf = read_gguf(path, keep=TOKENIZER_KEYS)
    model = gguf.metadata.get("tokenizer.ggml.model")
    gemma = model == "llama" and gguf.metadata.get("general.architecture") in GEMMA_ARCHITECTURES
    if model != "gpt2" and not gemma:
        raise BadInputError(f"{path}: a tokenizer of type {str(model)[:40]!r} "
                            "(tokenizer.ggml.model) is not supported yet (byte-level BPE 'gpt2', "
                            "and Gemma's sentencepiece); pass --tokens instead")
    try:
        return _gemma(gguf) if gemma else _byte_level(gguf)
    except BadInputError:
        raise
    except Exception as exc:  # `tokenizers` raises bare Exceptions for a malformed vocabulary
        raise gguf.error(f"cannot build its tokenizer: {str(exc)[:200]}") from None

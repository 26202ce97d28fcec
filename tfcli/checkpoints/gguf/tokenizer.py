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

The tokenizer metadata is checked by key with the typed reader of the model metadata
(gguf_spec.Metadata) before `tokenizers` sees it: the token array within bounds far above any
real vocabulary (Gemma 3 has 262,144 tokens), token types and scores one per token and of
their item type, merges strings of two tokens, and every special-token id inside the vocabulary.
Every call into `tokenizers` goes through deps.calling (a Rust panic is one line).
"""

from __future__ import annotations

from typing import Any

from tfcli.checkpoints.gguf.file import ArrayInfo, GGUFFile, read_gguf
from tfcli.checkpoints.gguf.spec import Metadata
from tfcli.checkpoints.order_merges import merges_from_order
from tfcli.checkpoints.tokenizer_json import MAX_MERGES, check_merges, check_vocabulary
from tfcli.core.deps import calling
from tfcli.core.errors import BadInputError

TOKENIZER_KEYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type")
TOKENIZER = "tokenizer.ggml"
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


def checked_tokens(gguf: GGUFFile) -> list[str]:
    """tokenizer.ggml.tokens, and every array and id of the tokenizer checked against it."""
    m = Metadata(gguf, TOKENIZER)
    tokens = m.array("tokens", str)
    where = f"{gguf.path}: metadata key '{TOKENIZER}.tokens'"
    if not isinstance(tokens, list):  # too long to be read: far more than MAX_TOKENS
        raise BadInputError(f"{where} has {tokens.length:,} tokens, too many to read")
    check_vocabulary(tokens, where)
    for key, kind in (("token_type", int), ("scores", float)):
        if m.has(key):
            m.array(key, kind, len(tokens))
    for key in gguf.metadata:
        if key.startswith(f"{TOKENIZER}.") and key.endswith("_token_id"):
            m.index(key[len(TOKENIZER) + 1:], len(tokens))
    return tokens


def _merges(gguf: GGUFFile) -> list[tuple[str, str]]:
    m = Metadata(gguf, TOKENIZER)
    stored = m.array("merges", str)
    where = f"{gguf.path}: metadata key '{TOKENIZER}.merges'"
    check_merges(stored.length if isinstance(stored, ArrayInfo) else len(stored), where)
    if not isinstance(stored, list):
        raise BadInputError(f"{where} has {stored.length:,} merges, too many to read")
    merges = [tuple(merge.split(" ", 1)) for merge in stored]
    bad = next((i for i, pair in enumerate(merges) if len(pair) != 2), None)
    if bad is not None:
        raise gguf.error(f"metadata key '{TOKENIZER}.merges' item {bad:,} is not two tokens "
                         "separated by a space")
    return merges  # type: ignore[return-value]


def _byte_level(gguf: GGUFFile, tokens: list[str]) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    merges = _merges(gguf)
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


def _rebuilt_merges(gguf: GGUFFile, vocab: dict[str, int]) -> list[tuple[str, str]]:
    merges = merges_from_order(vocab, MAX_MERGES)  # stops at MAX_MERGES + 1
    if len(merges) > MAX_MERGES:
        raise gguf.error(f"metadata key '{TOKENIZER}.tokens': its order implies more than "
                         f"{MAX_MERGES:,} merges (MAX_MERGES)")
    return merges


def _gemma(gguf: GGUFFile, stored: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import BPE

    # a token of spaces alone is stored as real spaces; the tokenizer looks it up as U+2581s
    tokens = ["\u2581" * len(t) if " " in t and not t.strip() else t for t in stored]
    vocab = {t: i for i, t in reversed(list(enumerate(tokens)))}  # the first of duplicates
    unk = _token(gguf, tokens, "tokenizer.ggml.unknown_token_id") or "<unk>"
    tok = Tokenizer(BPE(vocab=vocab, merges=_rebuilt_merges(gguf, vocab), fuse_unk=True,
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
    tokens = checked_tokens(gguf)
    # `tokenizers` raises bare Exceptions for a malformed vocabulary, and Rust panics
    with calling("tokenizers", str(path), "building its tokenizer", capture_fd2=True):
        return _gemma(gguf, tokens) if gemma else _byte_level(gguf, tokens)

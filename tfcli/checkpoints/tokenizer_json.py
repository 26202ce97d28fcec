"""What a tokenizer may hold, decided when it is loaded (a tokenizer.json here, a GGUF file's
vocabulary in gguf_tokenizer.py), so that `tokenizers` never meets it mid-encode.

- Bounds far above real models (Gemma 3: 262,144 tokens of a few characters; Llama 3: 128,256
  tokens and 280,147 merges) on the vocabulary, its tokens and merges.
- The unknown token: `tokenizers` looks `model.unk_token` up in `model.vocab` only when it meets
  a character it lacks, and fails inside `encode`; it must be there (Unigram: `model.unk_id`).
- The normaliser's growth: each normaliser's output is bounded by `mult * n + add` for an input
  of n characters (Replace by its content, NFKD by 18 - U+FDFA -, a Sequence by the product);
  one that can multiply a text more than MAX_EXPANSION times is refused by key, and a text is
  refused before encoding when its bound exceeds MAX_NORMALISED_CHARS.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass
from pathlib import Path

from tfcli.core.errors import BadInputError, shown

MAX_TOKENS = 2**21  # 2,097,152 tokens (added tokens counted apart)
MAX_TOKEN_CHARS = 65_536  # characters in one token
MAX_VOCAB_CHARS = 2**26  # 67,108,864 characters over all tokens
MAX_MERGES = 2**23  # 8,388,608 merges, stored or rebuilt from the token order
MAX_EXPANSION = 1024  # BertNormalizer's bound is 162, NFKC's 18, Llama's Prepend + Replace 4
MAX_NORMALISED_CHARS = 2**26


@dataclass(frozen=True)
class Growth:
    """A normaliser's output length is at most mult * n + add for n input characters."""

    mult: int = 1
    add: int = 0

    def then(self, other: Growth) -> Growth:
        return Growth(self.mult * other.mult, other.mult * self.add + other.add)

    def bound(self, n: int) -> int:
        return self.mult * n + self.add


# fixed factors: Unicode normal forms (NFKD of U+FDFA is 18 characters), case mapping, bytes
_FIXED = {"NFC": 18, "NFD": 18, "NFKC": 18, "NFKD": 18, "Lowercase": 3, "ByteLevel": 4,
          "Strip": 1, "StripAccents": 1, "Nmt": 1, "BertNormalizer": 3 * 18 * 3}


def check_vocabulary(tokens: list[str], where: str) -> None:
    """The bounds on a vocabulary's size, its longest token and its characters; `where` names
    the file and key in the message."""
    if len(tokens) > MAX_TOKENS:
        raise BadInputError(f"{where} has {len(tokens):,} tokens (at most {MAX_TOKENS:,}, "
                            "MAX_TOKENS)")
    longest = max(map(len, tokens), default=0)
    if longest > MAX_TOKEN_CHARS:
        raise BadInputError(f"{where} holds a token of {longest:,} characters (at most "
                            f"{MAX_TOKEN_CHARS:,}, MAX_TOKEN_CHARS)")
    total = sum(map(len, tokens))
    if total > MAX_VOCAB_CHARS:
        raise BadInputError(f"{where} holds {total:,} characters (at most {MAX_VOCAB_CHARS:,}, "
                            "MAX_VOCAB_CHARS)")


def check_merges(count: int, where: str) -> None:
    if count > MAX_MERGES:
        raise BadInputError(f"{where} has {count:,} merges (at most {MAX_MERGES:,}, MAX_MERGES)")


def check_tokenizer_json(doc: object, path: Path) -> Growth:
    """Refuse what tokenizers would fail on or blow up with later (module docstring); the
    normaliser's growth for checking each text."""
    if not isinstance(doc, dict):
        raise BadInputError(f"{path}: a tokenizer.json must hold a JSON object")
    model = doc.get("model")
    model = model if isinstance(model, dict) else {}
    vocab = model.get("vocab")
    pieces = list(vocab) if isinstance(vocab, dict) else \
        [item[0] if isinstance(item, list) and item else "" for item in vocab] \
        if isinstance(vocab, list) else []
    if not all(isinstance(p, str) for p in pieces):
        raise BadInputError(f"{path}: model.vocab must list tokens as strings")
    check_vocabulary(pieces, f"{path}: model.vocab")
    merges = model.get("merges")
    check_merges(len(merges) if isinstance(merges, list) else 0, f"{path}: model.merges")
    added = doc.get("added_tokens")
    added = added if isinstance(added, list) else []
    check_vocabulary([a.get("content", "") if isinstance(a, dict) else "" for a in added],
                     f"{path}: added_tokens")
    _check_unknown(model, vocab, path)
    return growth(doc.get("normalizer"), "normalizer", path)


def _check_unknown(model: dict, vocab: object, path: Path) -> None:
    kind = model.get("type")
    if kind == "Unigram":
        unk_id, size = model.get("unk_id"), len(vocab) if isinstance(vocab, list) else 0
        if unk_id is not None and not (isinstance(unk_id, int) and 0 <= unk_id < size):
            raise BadInputError(f"{path}: model.unk_id {shown(unk_id)} is not an id in "
                                f"model.vocab (0 to {size - 1:,})")
        return
    unk = model.get("unk_token")
    if kind in ("WordPiece", "WordLevel") and unk is None:
        unk = "[UNK]"  # what tokenizers assumes for these models
    if unk is not None and isinstance(vocab, dict) and unk not in vocab:
        raise BadInputError(f"{path}: model.unk_token {shown(unk)} is not in model.vocab; "
                            "tokenizers would fail on the first piece of text it lacks")


def growth(normalizer: object, key: str, path: Path) -> Growth:
    """The bound on `normalizer`'s output (Growth), each part checked against MAX_EXPANSION."""
    if not isinstance(normalizer, dict):
        return Growth()
    kind = normalizer.get("type")
    if kind == "Sequence":
        parts = normalizer.get("normalizers")
        total = Growth()
        for i, part in enumerate(parts if isinstance(parts, list) else []):
            total = total.then(growth(part, f"{key}.normalizers[{i}]", path))
            _check_growth(total, f"{key} (up to {key}.normalizers[{i}])", path)
        return total
    found = _single(normalizer, str(kind))
    _check_growth(found, f"{key} ({shown(kind)})", path)
    return found


def _single(normalizer: dict, kind: str) -> Growth:
    if kind == "Replace":
        content = normalizer.get("content")
        c = len(content) if isinstance(content, str) else 0
        pattern = normalizer.get("pattern")
        literal = pattern.get("String") if isinstance(pattern, dict) else None
        if isinstance(literal, str) and literal:  # matches of len(literal) each become c chars
            return Growth(max(1, -(-c // len(literal))))
        return Growth(c + 1, c)  # a regex or "" can match between every two characters
    if kind == "Prepend":  # once per piece of text between added tokens: per character at worst
        prepend = normalizer.get("prepend")
        p = len(prepend) if isinstance(prepend, str) else 0
        return Growth(1 + p, p)
    if kind == "Precompiled":
        return Growth(_longest_replacement(normalizer.get("precompiled_charsmap")))
    return Growth(_FIXED.get(kind, 18))


def _longest_replacement(charsmap: object) -> int:
    """The longest string a sentencepiece charsmap maps a character to: the blob is a u32 trie
    size, the trie, then NUL-terminated replacement strings (spm_precompiled)."""
    try:
        blob = base64.b64decode(charsmap if isinstance(charsmap, str) else "", validate=True)
        (trie_size,) = struct.unpack_from("<I", blob)
    except (binascii.Error, struct.error, ValueError):
        return 1  # none: `tokenizers` refuses such a charsmap itself
    strings = blob[4 + trie_size:].split(b"\0")
    return max(1, *(len(s.decode("utf-8", "replace")) for s in strings))


def _check_growth(found: Growth, key: str, path: Path) -> None:
    if found.mult > MAX_EXPANSION:
        raise BadInputError(f"{path}: {key} can make a text {found.mult:,} times longer (at most "
                            f"{MAX_EXPANSION:,}, MAX_EXPANSION)")


def check_normalised(found: Growth, n_chars: int, path: str, option: str) -> None:
    """Refuse, before encoding, a text whose normalised form could exceed the bound."""
    if found.bound(n_chars) > MAX_NORMALISED_CHARS:
        raise BadInputError(f"{path}: normalizer can make {option} ({n_chars:,} characters) "
                            f"{found.bound(n_chars):,} characters long (at most "
                            f"{MAX_NORMALISED_CHARS:,}, MAX_NORMALISED_CHARS); shorten it")

"""Text <-> token ids: UTF-8 bytes by default, or a checkpoint's tokenizer.json via `tokenizers`.

The byte-level tokenizer needs a vocabulary of at least 256 ids and is what lets any spec
(random weights included) run on text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from tfcli.errors import BadInputError

BYTE_VOCAB = 256


class Tokenizer(Protocol):
    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def token_text(self, token: int) -> str: ...


class ByteTokenizer:
    """UTF-8 bytes as token ids 0-255."""

    name = "utf-8 bytes"

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        return bytes(i for i in ids if 0 <= i < BYTE_VOCAB).decode("utf-8", errors="replace")

    def token_text(self, token: int) -> str:
        if 32 <= token < 127:
            return chr(token)
        return f"<0x{token:02X}>" if token < BYTE_VOCAB else f"<{token}>"


class HFTokenizer:
    """A Hugging Face tokenizer.json, through the optional `tokenizers` package."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer as _Tokenizer  # optional dependency, imported on use

        self.name = str(path)
        try:
            self._tok = _Tokenizer.from_file(str(path))
        except Exception as exc:  # `tokenizers` raises bare Exception for unreadable or bad JSON
            raise BadInputError(f"{path}: cannot be loaded as a tokenizer ({exc})") from None

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids))

    def token_text(self, token: int) -> str:
        return self._tok.id_to_token(token) or f"<{token}>"

    def token_id(self, text: str) -> int | None:
        return self._tok.token_to_id(text)


def _tokenizers_installed() -> bool:
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def get_tokenizer(vocab_size: int, weights_dir: str | None = None,
                  option: str = "--text") -> Tokenizer:
    """The checkpoint's tokenizer.json when there is one and `tokenizers` is installed, else
    UTF-8 bytes (which needs vocab_size >= 256). `option` names the text's option in errors."""
    if weights_dir is not None:
        path = Path(weights_dir) / "tokenizer.json"
        if path.is_file() and _tokenizers_installed():
            return HFTokenizer(path)
    if vocab_size < BYTE_VOCAB:
        raise BadInputError(
            f"{option} needs a vocabulary of at least {BYTE_VOCAB} for the byte-level tokenizer "
            f"(this spec has {vocab_size}); pass --tokens instead"
        )
    return ByteTokenizer()


def parse_token_list(text: str, vocab_size: int, option: str = "--tokens") -> list[int]:
    """'1,2,3' -> [1, 2, 3], each id checked against the vocabulary."""
    if not text.strip():
        raise BadInputError(f"{option} is empty")
    try:
        ids = [int(part) for part in text.replace(" ", "").split(",")]  # "1,,2": an error
    except ValueError:
        raise BadInputError(f"{option} takes comma-separated integers, got {text!r}") from None
    bad = [i for i in ids if not 0 <= i < vocab_size]
    if bad:
        raise BadInputError(f"{option}: token id {bad[0]} is outside the vocabulary [0, {vocab_size})")
    return ids

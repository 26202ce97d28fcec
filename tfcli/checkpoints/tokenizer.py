"""Text <-> token ids: UTF-8 bytes by default, or a checkpoint's tokenizer.json via `tokenizers`.

The byte-level tokenizer needs a vocabulary of at least 256 ids and is what lets any spec
(random weights included) run on text. Texts are always encoded alone: a tokenizer.json's own
padding and truncation are switched off, because padding without an attention mask changes
every hidden state and truncation cuts a text silently. Length limits are checked by
`fit_length`, which refuses or (when asked) cuts and says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from tfcli.core.errors import BadInputError
from tfcli.core.intlist import parse_int_list

if TYPE_CHECKING:
    from tfcli.checkpoints.tokenizer_json import Growth

BYTE_VOCAB = 256
HF_EXTRA = "pip install 'tfcli[hf]'"  # the extra in pyproject.toml that brings `tokenizers`
Keep = Literal["start", "end"]  # which end of a too-long text survives --truncate


class Tokenizer(Protocol):
    name: str
    max_length: int | None  # the length the tokenizer declares (tokenizer.json truncation)

    def encode(self, text: str) -> list[int]: ...

    def encode_truncated(self, text: str, max_length: int, keep: Keep) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def covers(self, token: int) -> bool: ...

    def token_text(self, token: int) -> str: ...


def _decode_runs(ids: list[int], covers: Callable[[int], bool],
                 decode_run: Callable[[list[int]], str]) -> str:
    """Decode each run of ids the tokenizer has; an id it lacks shows as <id> instead of
    vanishing (a random model, or a spec vocabulary larger than the tokenizer's, makes them)."""
    parts: list[str] = []
    run: list[int] = []
    for i in ids:
        if covers(i):
            run.append(i)
            continue
        parts += [decode_run(run) if run else "", f"<{i}>"]
        run = []
    parts.append(decode_run(run) if run else "")
    return "".join(parts)


class ByteTokenizer:
    """UTF-8 bytes as token ids 0-255."""

    name = "utf-8 bytes"
    max_length = None

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def encode_truncated(self, text: str, max_length: int, keep: Keep) -> list[int]:
        ids = self.encode(text)
        return ids[:max_length] if keep == "start" else ids[len(ids) - max_length:]

    def decode(self, ids: list[int]) -> str:
        """Bytes decoded as UTF-8; an id >= 256 is no byte, so it shows as <id>."""
        return _decode_runs(ids, self.covers, lambda run: bytes(run).decode("utf-8", errors="replace"))

    def covers(self, token: int) -> bool:
        return 0 <= token < BYTE_VOCAB

    def token_text(self, token: int) -> str:
        if 32 <= token < 127:
            return chr(token)
        return f"<0x{token:02X}>" if token < BYTE_VOCAB else f"<{token}>"


# The largest tokenizer.json of a published model is about 33 MB (Gemma 3's 262k vocabulary).
MAX_TOKENIZER_BYTES = 256 * 2**20


class HFTokenizer:
    """A Hugging Face tokenizer.json, through the optional `tokenizers` package. What it may
    hold is decided when it is loaded (checkpoints/tokenizer_json.py: bounds, the unknown
    token, the normaliser's growth); every call into `tokenizers` goes through deps.calling,
    so what it raises - a Rust panic included - is one line naming the file."""

    def __init__(self, path: Path) -> None:
        import json

        from tfcli.checkpoints.configs import read_bounded
        from tfcli.checkpoints.tokenizer_json import check_tokenizer_json
        from tfcli.core.errors import clip

        self.name = str(path)
        # read here, bounded and regular files only: from_file would read a FIFO or /dev/zero
        data = read_bounded(path, MAX_TOKENIZER_BYTES, "a tokenizer.json")
        with self._calling("loading it as a tokenizer"):
            from tokenizers import Tokenizer as _Tokenizer  # optional, imported on use

            try:
                text = data.decode("utf-8")
                self._tok = _Tokenizer.from_str(text)
            except Exception as exc:  # `tokenizers` raises bare Exception for bad JSON or UTF-8
                raise BadInputError(f"{path}: cannot be loaded as a tokenizer "
                                    f"({clip(str(exc), 120)})") from None
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:  # what serde took, json may not
            raise BadInputError(f"{path}: cannot be read as JSON ({clip(str(exc), 120)})") from None
        self._growth: Growth | None = check_tokenizer_json(doc, path)
        self._adopt()

    @classmethod
    def built(cls, tokenizer: Any, name: str) -> HFTokenizer:
        """A tokenizer built in memory (from a GGUF file's metadata), wrapped the same way."""
        self = cls.__new__(cls)
        self.name, self._tok, self._growth = name, tokenizer, None
        self._adopt()
        return self

    def _calling(self, doing: str) -> Any:
        from tfcli.core.deps import calling

        return calling("tokenizers", self.name, doing, capture_fd2=True)

    def _adopt(self) -> None:
        with self._calling("reading its settings"):
            truncation = self._tok.truncation
            # all-MiniLM-L6-v2's tokenizer.json pads every text to 128 (122 [PAD]s for four
            # words) and truncates at 128: encode each text alone, let fit_length handle it.
            self._tok.no_padding()
            self._tok.no_truncation()
        self.max_length: int | None = truncation["max_length"] if truncation else None

    def _check_growth(self, text: str) -> None:
        if self._growth is not None:
            from tfcli.checkpoints.tokenizer_json import check_normalised

            check_normalised(self._growth, len(text), self.name, "the text")

    def encode(self, text: str) -> list[int]:
        self._check_growth(text)
        with self._calling("encoding the text"):
            return list(self._tok.encode(text).ids)

    def encode_truncated(self, text: str, max_length: int, keep: Keep) -> list[int]:
        """The tokenizer's own truncation, so special tokens ([CLS] ... [SEP]) survive the cut."""
        self._check_growth(text)
        with self._calling("encoding the text"):
            try:
                self._tok.enable_truncation(max_length,
                                            direction="right" if keep == "start" else "left")
                return list(self._tok.encode(text).ids)
            except Exception as exc:  # e.g. max_length shorter than the special tokens it adds
                raise BadInputError(f"cannot cut the text to {max_length} tokens: {exc}") from None
            finally:
                self._tok.no_truncation()

    def decode(self, ids: list[int]) -> str:
        """`tokenizers` drops ids it lacks without a word; those show as <id> instead."""
        if all(self.covers(i) for i in ids):
            # one call: the decoder joins the whole sequence; special tokens stay visible
            # (<|im_end|>, [SEP]), as transformers' decode(skip_special_tokens=False) shows them
            return self._decode_run(ids)
        return _decode_runs(ids, self.covers, self._decode_run)

    def _decode_run(self, ids: list[int]) -> str:
        with self._calling("decoding ids"):
            return str(self._tok.decode(ids, skip_special_tokens=False))

    def covers(self, token: int) -> bool:
        return token >= 0 and self._token(token) is not None

    def token_text(self, token: int) -> str:
        return self._token(token) or f"<{token}>"

    def _token(self, token: int) -> str | None:
        from tfcli.core.deps import calling

        with calling("tokenizers", self.name, f"looking up token {token}"):  # no fd 2: cheap
            return self._tok.id_to_token(token)  # type: ignore[no-any-return]

def _is_gguf(path: str) -> bool:
    from tfcli.checkpoints.gguf.file import is_gguf

    return is_gguf(path)


def _tokenizers_installed() -> bool:
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def get_tokenizer(vocab_size: int, weights_dir: str | None = None,
                  option: str = "--text") -> Tokenizer:
    """The checkpoint's tokenizer.json when there is one, else UTF-8 bytes (which needs
    vocab_size >= 256). `option` names the text's option in errors. A tokenizer.json without
    the `tokenizers` package is refused: bytes would give wrong ids for every real model."""
    if weights_dir is not None and _is_gguf(weights_dir):
        if not _tokenizers_installed():
            raise BadInputError(f"{option}: {weights_dir} needs the `tokenizers` package to turn "
                                f"text into this model's ids; install it with: {HF_EXTRA} "
                                "(or pass --tokens)")
        from tfcli.checkpoints.gguf.tokenizer import gguf_tokenizer

        return HFTokenizer.built(gguf_tokenizer(weights_dir), weights_dir)
    if weights_dir is not None:
        path = Path(weights_dir) / "tokenizer.json"
        if os.path.lexists(path):  # a FIFO or folder of that name is refused, not skipped for bytes
            if not _tokenizers_installed():
                raise BadInputError(
                    f"{option}: {path} needs the `tokenizers` package to turn text into this "
                    f"model's ids; install it with: {HF_EXTRA} (or pass --tokens)")
            return HFTokenizer(path)
    if vocab_size < BYTE_VOCAB:
        raise BadInputError(
            f"{option} needs a vocabulary of at least {BYTE_VOCAB} for the byte-level tokenizer "
            f"(this spec has {vocab_size}); pass --tokens instead"
        )
    return ByteTokenizer()


def parse_token_list(text: str, vocab_size: int, option: str = "--tokens") -> list[int]:
    """'1,2,3' -> [1, 2, 3] (ASCII digits only, see tfcli.core.intlist), each id checked against
    the vocabulary."""
    ids = parse_int_list(text, option)
    bad = [i for i in ids if not 0 <= i < vocab_size]
    if bad:
        raise BadInputError(f"{option}: token id {bad[0]} is outside the vocabulary [0, {vocab_size})")
    return ids


def check_text(text: str, option: str) -> str:
    """Refuse a text that is not valid UTF-8. Undecodable argv bytes arrive as lone surrogates
    (U+DC80-U+DCFF, Python's surrogateescape), which neither encoder can take."""
    for position, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            what = (f"byte 0x{ord(char) - 0xDC00:02X}" if "\udc80" <= char <= "\udcff"
                    else f"lone surrogate U+{ord(char):04X}")
            raise BadInputError(f"{option} is not valid UTF-8: {what} at character {position + 1}")
    return text


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    note: str | None  # set when --truncate cut the text, saying how much


def text_limit(tokenizer: Tokenizer, model_limit: int, model_why: str) -> tuple[int, str]:
    """The most ids a text may have and a phrase saying where that limit comes from: the
    model's own (`model_why`), or a shorter one that the tokenizer.json declares."""
    declared = tokenizer.max_length
    if declared is not None and declared < model_limit:
        return declared, f"the tokenizer.json truncates at {declared:,}; {model_why}"
    return model_limit, model_why


def fit_length(tokenizer: Tokenizer, text: str, option: str, model_limit: int, *,
               truncate: bool, keep: Keep = "start", model_why: str | None = None) -> Encoded:
    """Encode `text` alone; longer than the limit is refused, naming both lengths, unless
    `truncate`, which cuts it (keeping its start or its end) and returns a note saying so."""
    ids = tokenizer.encode(check_text(text, option))
    limit, why = text_limit(tokenizer, model_limit,
                            model_why or f"the model takes at most {model_limit:,}")
    if len(ids) <= limit:
        return Encoded(ids, None)
    if not truncate or limit < 1:
        raise BadInputError(f"{option} is {len(ids):,} tokens, longer than {limit:,}: {why}; "
                            + (f"shorten it or pass --truncate to cut it to {limit:,}"
                               if limit >= 1 else "nothing of it fits"))
    cut = tokenizer.encode_truncated(text, limit, keep)
    side = "first" if keep == "start" else "last"
    return Encoded(cut, f"{option} was cut from {len(ids):,} to {len(cut):,} tokens by --truncate, "
                        f"keeping the {side} ones: {why}")

"""Text and integer-list inputs: strict integer lists, tokenizer.json padding/truncation off,
length limits that refuse or cut visibly, no silent byte fallback, ids the byte decoder
cannot show, and non-UTF-8 text."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfcli.core import intlist
from tfcli.checkpoints import tokenizer
from tfcli.core.errors import BadInputError
from tfcli.core.intlist import MAX_DIGITS, parse_int_list
from tfcli.checkpoints.tokenizer import (ByteTokenizer, HFTokenizer, check_text, fit_length, get_tokenizer,
                             parse_token_list)

ROOT = Path(__file__).resolve().parents[2]


# --- strict integer lists -------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("1,2,3", [1, 2, 3]), (" 1, 2 ,\t3 ", [1, 2, 3]), ("007", [7]), ("0", [0]),
    ("9" * MAX_DIGITS, [int("9" * MAX_DIGITS)]),
])
def test_ascii_integer_lists_parse(text: str, expected: list[int]) -> None:
    assert parse_int_list(text, "--tokens") == expected


@pytest.mark.parametrize("text", [
    "１２",  # full-width digits: int() reads 12
    "1_0",  # int() reads 10
    "٣",  # Arabic-Indic three
    "1 2",  # a space inside an item (the old parser glued it into 12)
    "1,,2", "1,", ",1", "+1", "-1", "0x10", "1.0", "1e3", "a", "1\u00a0", "\u20031",
])
def test_anything_but_ascii_digits_is_refused(text: str) -> None:
    with pytest.raises(BadInputError, match="--tokens"):
        parse_int_list(text, "--tokens")


@pytest.mark.parametrize("text", ["", " ", "\t"])
def test_an_empty_list_is_refused(text: str) -> None:
    with pytest.raises(BadInputError, match="--depths is empty"):
        parse_int_list(text, "--depths")


def test_digit_count_is_bounded_before_int_runs() -> None:
    with pytest.raises(BadInputError, match=f"5,000 digits; at most {MAX_DIGITS}"):
        parse_int_list("1" * 5000, "--tokens")  # int() itself would refuse past 4,300 digits
    with pytest.raises(BadInputError, match="item 2 of 2 has 19 digits"):
        parse_int_list("1," + "1" * 19, "--tokens")


def test_item_count_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intlist, "MAX_ITEMS", 4)
    assert parse_int_list("1,2,3,4", "--tokens") == [1, 2, 3, 4]
    with pytest.raises(BadInputError, match="5 items; at most 4"):
        parse_int_list("1,2,3,4,5", "--tokens")


def test_the_offending_item_is_echoed_shortened_and_escaped() -> None:
    with pytest.raises(BadInputError) as bad:
        parse_int_list("1," + "x" * 10_000, "--tokens")
    assert len(bad.value.message) < 200 and "…" in bad.value.message and "item 2 of 2" in bad.value.message
    with pytest.raises(BadInputError) as esc:
        parse_int_list("\x1b[31mred\x07", "--tokens")
    assert "\x1b" not in esc.value.message and "\x07" not in esc.value.message
    assert "\\x1b" in esc.value.message


def _oracle(text: str) -> list[int] | None:
    """The rule without a regex: items split on ',', spaces/tabs trimmed, 1-18 ASCII digits."""
    items = [item.strip(" \t") for item in text.split(",")]
    if not all(item and len(item) <= MAX_DIGITS and all(c in "0123456789" for c in item)
               for item in items):
        return None
    return [int(item) for item in items]


LIST_CHARS = st.sampled_from(list("0123456789, \t-+_.") + ["１", "٣", "\u00a0", "\u2003", "x"])


@settings(deadline=None, max_examples=2000)
@given(st.one_of(st.text(LIST_CHARS, max_size=30), st.text(max_size=30)))
def test_any_string_is_a_valid_list_or_bad_input(text: str) -> None:
    expected = _oracle(text)
    try:
        got = parse_int_list(text, "--tokens")
    except BadInputError as exc:
        assert expected is None, (text, exc.message)
        assert "\n" not in exc.message and len(exc.message) < 200
        return
    assert got == expected


def test_token_ids_are_checked_against_the_vocabulary() -> None:
    assert parse_token_list("0,63", 64) == [0, 63]
    with pytest.raises(BadInputError, match="token id 64 is outside the vocabulary"):
        parse_token_list("1,64", 64)


# --- the byte tokenizer's decoder -------------------------------------------------------------

def test_ids_past_the_byte_range_show_as_id_instead_of_vanishing() -> None:
    bytes_ = ByteTokenizer()
    assert bytes_.decode([72, 105, 22294, 33]) == "Hi<22294>!"
    assert bytes_.decode([22294, 300]) == "<22294><300>"
    assert bytes_.decode(list("café".encode())) == "café"  # multi-byte text still decodes whole
    assert bytes_.decode([0xC3, 300, 0xA9]) == "\ufffd<300>\ufffd"  # a split character is visible


# --- tokenizer.json: padding and truncation off, limits explicit ------------------------------

WORDS = ["[UNK]", "[PAD]", "[CLS]", "[SEP]", "a", "b", "c"]


@pytest.fixture
def padded_tokenizer_dir(tmp_path: Path) -> Path:
    """A tokenizer.json that, like all-MiniLM-L6-v2's, pads to a fixed 16 and truncates at 6."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.enable_padding(length=16, pad_id=1, pad_token="[PAD]")
    tok.enable_truncation(6)
    tok.save(str(tmp_path / "tokenizer.json"))
    return tmp_path


def test_a_text_is_encoded_alone_without_the_files_padding(padded_tokenizer_dir: Path) -> None:
    hf = get_tokenizer(100, str(padded_tokenizer_dir))
    assert isinstance(hf, HFTokenizer)
    assert hf.encode("a b") == [2, 4, 5, 3]  # not 16 ids ending in [PAD]s
    assert hf.max_length == 6
    assert len(hf.encode("a b c a b c a b")) == 10  # encode itself never cuts


def test_longer_than_the_tokenizer_takes_is_refused_naming_both_lengths(
        padded_tokenizer_dir: Path) -> None:
    hf = get_tokenizer(100, str(padded_tokenizer_dir))
    with pytest.raises(BadInputError) as bad:
        fit_length(hf, "a b c a b c a b", "--text", 512, truncate=False)
    message = bad.value.message
    assert "--text is 10 tokens, longer than 6" in message and "512" in message
    assert "--truncate" in message


@pytest.mark.parametrize(("keep", "expected"), [("start", [2, 4, 5, 6, 4, 3]),
                                                 ("end", [2, 6, 4, 5, 6, 3])])
def test_truncate_cuts_keeping_the_special_tokens_and_notes_it(
        padded_tokenizer_dir: Path, keep: tokenizer.Keep, expected: list[int]) -> None:
    hf = get_tokenizer(100, str(padded_tokenizer_dir))
    encoded = fit_length(hf, "a b c a b c", "--prompt", 512, truncate=True, keep=keep)
    assert encoded.ids == expected
    assert encoded.note is not None and "cut from 8 to 6" in encoded.note
    assert len(hf.encode("a b c a b c")) == 8  # truncation is off again afterwards


def test_the_model_limit_applies_when_it_is_the_shorter(padded_tokenizer_dir: Path) -> None:
    hf = get_tokenizer(100, str(padded_tokenizer_dir))
    with pytest.raises(BadInputError, match="--text is 5 tokens, longer than 4: max_seq_len 4"):
        fit_length(hf, "a b c", "--text", 4, truncate=False, model_why="max_seq_len 4")
    assert fit_length(ByteTokenizer(), "abcdef", "--text", 4, truncate=True).ids == list(b"abcd")
    assert fit_length(ByteTokenizer(), "abcdef", "--text", 4, truncate=True,
                      keep="end").ids == list(b"cdef")


def test_a_tokenizer_json_without_the_package_is_refused_with_the_pip_command(
        padded_tokenizer_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenizer, "_tokenizers_installed", lambda: False)
    with pytest.raises(BadInputError) as bad:
        get_tokenizer(50257, str(padded_tokenizer_dir), "--prompt")
    assert "pip install 'tfcli[hf]'" in bad.value.message and "--prompt" in bad.value.message
    assert get_tokenizer(50257, None).name == "utf-8 bytes"  # no checkpoint: bytes, as before


def test_the_pip_command_names_the_extra_that_installs_tokenizers() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    name = tokenizer.HF_EXTRA.split("[")[1].split("]")[0]
    assert any(dep.startswith("tokenizers") for dep in extras[name])


# --- non-UTF-8 text ---------------------------------------------------------------------------

def test_undecodable_argv_bytes_are_refused_naming_the_option() -> None:
    assert check_text("café", "--text") == "café"
    with pytest.raises(BadInputError, match=r"--prompt is not valid UTF-8: byte 0xFF at character 2"):
        check_text("a\udcffb", "--prompt")
    with pytest.raises(BadInputError, match="lone surrogate U[+]D800"):
        check_text("\ud800", "--text")


def test_ids_the_tokenizer_json_lacks_show_as_id_and_are_explained(
        padded_tokenizer_dir: Path) -> None:
    from tfcli.analysis.generate.timed import _byte_notes

    hf = get_tokenizer(100, str(padded_tokenizer_dir))
    assert hf.decode([4, 5]) == "a b"  # the common case: one call to the decoder
    assert hf.decode([4, 50, 5]) == "a<50>b"  # `tokenizers` alone returns "a b"
    assert not hf.covers(50) and not hf.covers(-1) and hf.covers(6)
    (note,) = _byte_notes(hf, [4, 50, 51])
    assert note.startswith("2 of 3 new ids have no token in")
    assert _byte_notes(hf, [4, 5]) == [] and _byte_notes(None, [50]) == []


def test_a_tokenizer_json_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    """A FIFO or folder named tokenizer.json was skipped, silently giving UTF-8 byte ids."""
    import os

    fifo_dir, folder_dir = tmp_path / "fifo", tmp_path / "folder"
    fifo_dir.mkdir()
    folder_dir.mkdir()
    os.mkfifo(fifo_dir / "tokenizer.json")  # reading it would wait for a writer forever
    (folder_dir / "tokenizer.json").mkdir()
    for model_dir in (fifo_dir, folder_dir):
        with pytest.raises(BadInputError, match="tokenizer.json: not a regular file"):
            get_tokenizer(300, str(model_dir))


def test_a_tokenizer_json_is_read_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tfcli.checkpoints.tokenizer as tokenizer_module

    monkeypatch.setattr(tokenizer_module, "MAX_TOKENIZER_BYTES", 1000)
    (tmp_path / "tokenizer.json").write_text(" " * 1001, encoding="utf-8")
    with pytest.raises(BadInputError, match="too large for a tokenizer.json"):
        get_tokenizer(300, str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{not json \x1b[31m", encoding="utf-8")
    with pytest.raises(BadInputError, match="cannot be loaded as a tokenizer") as caught:
        get_tokenizer(300, str(tmp_path))
    assert "\x1b" not in caught.value.message

"""Tokenizers that `tokenizers` would fail on, panic in or blow up with at use time (issue 28,
classes 4, 5 and 7): decided when the tokenizer is loaded - a tokenizer.json's unknown token,
bounds on its vocabulary and merges, its normaliser's growth; a GGUF file's tokenizer arrays
and special-token ids, by key - and whatever `tokenizers` still raises (a Rust panic from a
backtracking regex included) is one line. Each case: exit 2, one line naming the file."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest

from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, write_gguf
from tests.cli.guarded import run_in_memory
from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors, write_model
from tfcli.checkpoints import tokenizer_json
from tfcli.checkpoints.gguf.tokenizer import gguf_tokenizer

SURFACES = {"run": ("run", "--text", "a b"), "generate": ("generate", "--text", "a b",
                                                            "--max-new-tokens", "1")}


def _one_line(code: int, out: str, err: str, path: Path) -> str:
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"tfcli: error: {path}"), err
    return err


# --- tokenizer.json ----------------------------------------------------------------------------

WORDS = {"a": 0, "b": 1, "[UNK]": 2}


def _tokenizer_json(model: dict | None = None, normalizer: dict | None = None,
                    pre_tokenizer: dict | None = None, added: list | None = None) -> dict:
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added or [],
            "normalizer": normalizer,
            "pre_tokenizer": pre_tokenizer or {"type": "WhitespaceSplit"},
            "post_processor": None, "decoder": None,
            "model": model or {"type": "WordLevel", "vocab": WORDS, "unk_token": "[UNK]"}}


def _bpe(vocab: dict, merges: list, unk: str | None) -> dict:
    return {"type": "BPE", "vocab": vocab, "merges": merges, "unk_token": unk, "dropout": None,
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
            "byte_fallback": False}


def _replace(pattern: dict, content: str) -> dict:
    return {"type": "Replace", "pattern": pattern, "content": content}


DOUBLE_SPACES = {"type": "Sequence", "normalizers": [_replace({"String": " "}, "  ")] * 11}
# case -> (tokenizer.json, limits patched, what the message says)
JSON_CASES: dict[str, tuple[dict, dict[str, int], str]] = {
    "WordLevel unk missing": (_tokenizer_json({"type": "WordLevel", "vocab": {"a": 0, "b": 1},
                                               "unk_token": "<missing>"}), {},
                              "model.unk_token '<missing>' is not in model.vocab"),
    "WordPiece unk missing": (_tokenizer_json({"type": "WordPiece", "vocab": {"a": 0, "b": 1},
                                               "unk_token": "[UNK]",
                                               "continuing_subword_prefix": "##",
                                               "max_input_chars_per_word": 100}), {},
                              "model.unk_token '[UNK]' is not in model.vocab"),
    "BPE unk missing": (_tokenizer_json(_bpe({"a": 0, "b": 1}, [], "<zz>")), {},
                        "model.unk_token '<zz>' is not in model.vocab"),
    "Replace of '' by 2,000 chars": (_tokenizer_json(normalizer=_replace({"String": ""}, "x" * 2000)),
                                     {}, "normalizer ('Replace') can make a text 2,001 times"),
    "Replace of a char by 5,000": (_tokenizer_json(normalizer=_replace({"String": "a"}, "b" * 5000)),
                                   {}, "normalizer ('Replace') can make a text 5,000 times"),
    "Replace of a regex": (_tokenizer_json(normalizer=_replace({"Regex": "a*"}, "b" * 1024)), {},
                           "1,025 times"),
    "Prepend of 2,000 chars": (_tokenizer_json(normalizer={"type": "Prepend", "prepend": "x" * 2000}),
                               {}, "normalizer ('Prepend') can make a text 2,001 times"),
    "eleven doublings": (_tokenizer_json(normalizer=DOUBLE_SPACES), {},
                         "normalizer (up to normalizer.normalizers[10]) can make a text 2,048"),
    "too many tokens": (_tokenizer_json(), {"MAX_TOKENS": 2}, "model.vocab has 3 tokens"),
    "a long token": (_tokenizer_json(), {"MAX_TOKEN_CHARS": 4},
                     "model.vocab holds a token of 5 characters"),
    "too many characters": (_tokenizer_json(), {"MAX_VOCAB_CHARS": 6},
                            "model.vocab holds 7 characters"),
    "too many merges": (_tokenizer_json(_bpe({"a": 0, "b": 1, "ab": 2, "[UNK]": 3},
                                             [["a", "b"]], "[UNK]")), {"MAX_MERGES": 0},
                        "model.merges has 1 merges"),
    "too many added tokens": (_tokenizer_json(added=[{"id": i, "content": f"<{i}>", "single_word": False,
                                                      "lstrip": False, "rstrip": False, "normalized": False,
                                                      "special": True} for i in range(3, 7)]),
                              {"MAX_TOKENS": 3}, "added_tokens has 4 tokens"),
    "a text that normalises too long": (_tokenizer_json(), {"MAX_NORMALISED_CHARS": 2},
                                        "normalizer can make the text (3 characters)"),
    "a backtracking regex": (_tokenizer_json(pre_tokenizer={
        "type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated", "invert": False}),
        {}, "tokenizers panicked encoding the text: PanicException"),
}
TEXTS = {"a backtracking regex": "a" * 40 + "b"}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model(tmp_path_factory.mktemp("hf") / "tiny", GPT2_CONFIG,
                       gpt2_tensors(np.random.default_rng(0)))


@pytest.mark.parametrize("surface", sorted(SURFACES))
@pytest.mark.parametrize("case", sorted(JSON_CASES))
def test_a_tokenizer_json_is_refused_when_loaded(case: str, surface: str, model_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    doc, limits, expected = JSON_CASES[case]
    for name, value in limits.items():
        monkeypatch.setattr(tokenizer_json, name, value)
    path = model_dir / "tokenizer.json"
    path.write_text(json.dumps(doc))
    args = list(SURFACES[surface])
    args[2] = TEXTS.get(case, args[2])
    err = _one_line(*run_in_memory(args[0], str(model_dir), *args[1:]), path)
    assert expected in err, err


SOUND_NORMALIZERS = {  # those of real models: none is refused
    "llama": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                  _replace({"String": " "}, "\u2581")]},
    "bert": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
             "strip_accents": None, "lowercase": True},
    "nfkc": {"type": "NFKC"},
    "none": None,
}


@pytest.mark.parametrize("name", sorted(SOUND_NORMALIZERS))
def test_real_normalizers_are_accepted(name: str, model_dir: Path) -> None:
    (model_dir / "tokenizer.json").write_text(
        json.dumps(_tokenizer_json(normalizer=SOUND_NORMALIZERS[name])))
    code, out, err = run_in_memory("run", str(model_dir), "--text", "a b", "-f", "json")
    assert code == 0, err


def test_a_precompiled_charsmap_grows_by_its_longest_replacement() -> None:
    blob = struct.pack("<I", 8) + b"\0" * 8 + b"ab\0" + ("\u2581" * 7).encode() + b"\0"
    normalizer = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()}
    assert tokenizer_json.growth(normalizer, "normalizer", Path("t.json")).mult == 7


# --- a GGUF file's tokenizer ---------------------------------------------------------------------

CHARS = [chr(c) for c in range(33, 127)]  # 94 byte-level tokens, then "hi" and "<s>"
TOKENS = [*CHARS, "hi", "<s>"]
N = len(TOKENS)


def _tokenizer_keys(writer: gguf.GGUFWriter, changes: dict[str, Any]) -> None:
    """A gpt2 (byte-level BPE) tokenizer of N tokens; `changes` replace or add keys (None
    removes one); a value is (writer method name, value)."""
    keys: dict[str, Any] = {
        "tokenizer.ggml.model": ("add_string", "gpt2"),
        "tokenizer.ggml.tokens": ("array", TOKENS),
        "tokenizer.ggml.token_type": ("array", [1] * (N - 1) + [3]),
        "tokenizer.ggml.scores": ("array", [0.0] * N),
        "tokenizer.ggml.merges": ("array", ["h i"]),
        "tokenizer.ggml.bos_token_id": ("add_uint32", N - 1),
        "tokenizer.ggml.eos_token_id": ("add_uint32", N - 1),
    } | changes
    for key, entry in keys.items():
        if entry is not None:
            method, value = entry
            getattr(writer, "add_array" if method == "array" else method)(key, value)


def _gguf(folder: Path, changes: dict[str, Any]) -> Path:
    return write_gguf(folder / "tok.gguf", "llama", llama_metadata(), llama_tensors(vocab=N),
                      extra=lambda w: _tokenizer_keys(w, changes))


def test_a_sound_gguf_tokenizer_runs(tmp_path: Path) -> None:
    code, out, err = run_in_memory("run", str(_gguf(tmp_path, {})), "--text", "hi", "-f", "json")
    assert code == 0, err


GGUF_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "token types short": ({"tokenizer.ggml.token_type": ("array", [1] * (N - 1))},
                          f"'tokenizer.ggml.token_type' has {N - 1} items where {N} are expected"),
    "token types long": ({"tokenizer.ggml.token_type": ("array", [1] * (N + 5))},
                         f"'tokenizer.ggml.token_type' has {N + 5} items"),
    "token types as strings": ({"tokenizer.ggml.token_type": ("array", ["1"] * N)},
                               "'tokenizer.ggml.token_type': expected an array of integers"),
    "token types as floats": ({"tokenizer.ggml.token_type": ("array", [1.0] * N)},
                              "'tokenizer.ggml.token_type': expected an array of integers"),
    "scores short": ({"tokenizer.ggml.scores": ("array", [0.0] * 10)},
                     "'tokenizer.ggml.scores' has 10 items"),
    "scores long (unread)": ({"tokenizer.ggml.scores": ("array", [0.0] * 1000)},
                             "'tokenizer.ggml.scores' has 1,000 items"),
    "scores as integers": ({"tokenizer.ggml.scores": ("array", [0] * N)},
                           "'tokenizer.ggml.scores': expected an array of numbers"),
    "scores as a string": ({"tokenizer.ggml.scores": ("add_string", "x")},
                           "'tokenizer.ggml.scores': expected an array"),
    "merges as integers": ({"tokenizer.ggml.merges": ("array", [1, 2])},
                           "'tokenizer.ggml.merges': expected an array of strings"),
    "a merge without a space": ({"tokenizer.ggml.merges": ("array", ["hi"])},
                                "'tokenizer.ggml.merges' item 0 is not two tokens"),
    "merges missing": ({"tokenizer.ggml.merges": None}, "'tokenizer.ggml.merges' is missing"),
    "tokens missing": ({"tokenizer.ggml.tokens": None}, "'tokenizer.ggml.tokens' is missing"),
    "tokens as integers": ({"tokenizer.ggml.tokens": ("array", list(range(N)))},
                           "'tokenizer.ggml.tokens': expected an array of strings"),
    "bos past the vocabulary": ({"tokenizer.ggml.bos_token_id": ("add_uint32", N)},
                                f"'tokenizer.ggml.bos_token_id': expected an id in [0, {N})"),
    "eos far past": ({"tokenizer.ggml.eos_token_id": ("add_uint32", 2**31)},
                     "'tokenizer.ggml.eos_token_id': expected an id"),
    "unknown negative": ({"tokenizer.ggml.unknown_token_id": ("add_int32", -1)},
                         "'tokenizer.ggml.unknown_token_id': expected an id"),
    "padding as a string": ({"tokenizer.ggml.padding_token_id": ("add_string", "0")},
                            "'tokenizer.ggml.padding_token_id': expected an id"),
    "separator past": ({"tokenizer.ggml.seperator_token_id": ("add_uint32", 10**6)},
                       "'tokenizer.ggml.seperator_token_id'"),
    "eot as a bool": ({"tokenizer.ggml.eot_token_id": ("add_bool", True)},
                      "'tokenizer.ggml.eot_token_id': expected an id"),
}


@pytest.mark.parametrize("surface", ["run", "generate"])
@pytest.mark.parametrize("case", sorted(GGUF_CASES))
def test_a_gguf_tokenizer_is_refused_by_key(case: str, surface: str, tmp_path: Path) -> None:
    changes, expected = GGUF_CASES[case]
    path = _gguf(tmp_path, changes)
    extra = ("--max-new-tokens", "1") if surface == "generate" else ()
    err = _one_line(*run_in_memory(surface, str(path), "--text", "hi", *extra), path)
    assert f"metadata key {expected}" in err, err


GGUF_LIMITS = {"MAX_TOKENS": (len(TOKENS) - 1, "has 96 tokens"),
               "MAX_TOKEN_CHARS": (1, "holds a token of 3 characters"),
               "MAX_VOCAB_CHARS": (50, "holds 99 characters"),
               "MAX_MERGES": (0, "'tokenizer.ggml.merges' has 1 merges")}


@pytest.mark.parametrize("limit", sorted(GGUF_LIMITS))
def test_a_gguf_vocabulary_is_bounded(limit: str, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import tfcli.checkpoints.gguf.tokenizer as module

    value, expected = GGUF_LIMITS[limit]
    monkeypatch.setattr(tokenizer_json, limit, value)
    if hasattr(module, limit):
        monkeypatch.setattr(module, limit, value)
    path = _gguf(tmp_path, {})
    err = _one_line(*run_in_memory("run", str(path), "--text", "hi"), path)
    assert expected in err and limit in err, err


class PanicException(BaseException):
    """What pyo3 raises for a Rust panic (matched by name, as deps.is_panic does)."""


def test_a_panic_building_a_gguf_tokenizer_is_one_line(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import tokenizers.models

    def panic(*args: object, **kwargs: object) -> None:
        raise PanicException("called `Option::unwrap()` on a `None` value")

    monkeypatch.setattr(tokenizers.models, "BPE", panic)
    path = _gguf(tmp_path, {})
    err = _one_line(*run_in_memory("run", str(path), "--text", "hi"), path)
    assert "tokenizers panicked building its tokenizer: PanicException" in err, err


# --- Gemma: merges rebuilt from the token order ----------------------------------------------


def _gemma_gguf(path: Path, tokens: list[str]) -> Path:
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_string("tokenizer.ggml.model", "llama")
    writer.add_array("tokenizer.ggml.tokens", tokens)
    writer.add_array("tokenizer.ggml.token_type", [1] * len(tokens))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _merges(path: Path) -> list[tuple[str, str]]:
    merges = json.loads(gguf_tokenizer(str(path)).to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in merges]


def _quadratic_reference(vocab: dict[str, int]) -> list[tuple[str, str]]:
    """The definition: every split into two tokens, earliest token first, longer left first."""
    found = [(index, -k, token[:k], token[k:]) for token, index in vocab.items()
             for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab]
    return [(left, right) for _, _, left, right in sorted(found)]


def test_gemma_merges_equal_the_definition(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for trial in range(20):
        alphabet = ["a", "b", "\u2581", "é", "😀"][: 2 + trial % 4]
        tokens = ["".join(rng.choice(alphabet, rng.integers(1, 6))) for _ in range(80)]
        tokens = [*alphabet, *tokens, "<unk>"]
        vocab = {t: i for i, t in reversed(list(enumerate(tokens)))}
        path = _gemma_gguf(tmp_path / f"g{trial}.gguf", tokens)
        assert _merges(path) == _quadratic_reference(vocab), trial


@pytest.mark.timeout(60)
def test_gemma_merges_of_long_tokens_are_linear(tmp_path: Path) -> None:
    """120 tokens of 65,536 characters, each the join of two tokens of 32,768: slicing every
    split costs ~10**11 character operations (minutes); hashing them costs ~10**7."""
    rng = np.random.default_rng(0)

    def piece() -> str:
        return bytes(rng.integers(97, 99, 32_768, dtype=np.uint8)).decode()

    pairs = [(piece(), piece()) for _ in range(120)]
    tokens = ["a", "b", *(t for left, right in pairs for t in (left, right, left + right))]
    assert _merges(_gemma_gguf(tmp_path / "long.gguf", tokens)) == pairs


def test_gemma_merges_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tfcli.checkpoints.gguf.tokenizer as module

    monkeypatch.setattr(module, "MAX_MERGES", 2)
    path = _gemma_gguf(tmp_path / "g.gguf", ["a", "b", "ab", "ba", "aba"])
    with pytest.raises(Exception, match="implies more than 2 merges") as caught:
        gguf_tokenizer(str(path))
    assert str(path) in str(caught.value)



"""Text and id-list options through the CLI: one line and exit 2 for bad input, --truncate for
run and generate, and ids past the byte range shown instead of dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfcli.core.errors import BadInputError
from tfcli.checkpoints.tokenizer import ByteTokenizer

WIDE_VOCAB = """\
name: wide-vocab
family: decoder
vocab_size: 1000
max_seq_len: 64
d_model: 16
n_heads: 2
n_layers: 1
d_ff: 32
"""


def one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("tfcli: error: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


@pytest.mark.parametrize(("args", "needles"), [
    (["run", "lesson-tiny", "--tokens", "１２"], ["--tokens", "ASCII digits", "'１２'"]),
    (["run", "lesson-tiny", "--tokens", "1_0"], ["--tokens", "'1_0'"]),
    (["run", "lesson-tiny", "--tokens", "1 2"], ["--tokens", "'1 2'"]),
    (["generate", "lesson-tiny", "--tokens", "1," + "7" * 5000], ["5,000 digits"]),
    (["generate", "lesson-tiny", "--tokens", "\x1b]0;pwned\x07"], ["\\x1b", "\\x07"]),
    (["depth-sweep", "--sublayer", "linear", "--depths", "1_0"], ["--depths", "'1_0'"]),
    (["depth-sweep", "--sublayer", "linear", "--depths", "２"], ["--depths", "'２'"]),
    (["depth-sweep", "--sublayer", "linear", "--depths", "1," + "x" * 3000], ["--depths", "…"]),
])
def test_integer_lists_take_ascii_digits_only(invoke, args: list[str], needles: list[str]) -> None:
    result = invoke(*args)
    one_line_error(result, *needles)
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert len(result.stderr) < 300  # the 3,000-character item is not echoed whole


@pytest.mark.parametrize(("args", "option"), [
    (["run", "lesson-tiny", "--text", "caf\udce9"], "--text"),
    (["generate", "lesson-tiny", "--text", "\udcff"], "--text"),
    (["run", "t5-small", "--layers", "1", "--text", "hi", "--target", "x\udc80"], "--target"),
])
def test_non_utf8_text_is_one_line(invoke, args: list[str], option: str) -> None:
    one_line_error(invoke(*args), f"{option} is not valid UTF-8: byte 0x")


def test_non_utf8_argv_bytes_from_a_real_process() -> None:
    """What a shell passes: raw bytes, which Python turns into surrogate escapes."""
    env = {**os.environ, "PYTHONUTF8": "1"}
    done = subprocess.run([sys.executable, "-m", "tfcli", "run", "lesson-tiny", "--text",
                           b"caf\xe9"], capture_output=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stderr == b"tfcli: error: --text is not valid UTF-8: byte 0xE9 at character 4\n"


def test_run_refuses_a_text_longer_than_max_seq_len_and_truncate_cuts_it(invoke) -> None:
    text = "abcdefghij" * 7  # 70 byte ids, lesson-tiny takes 64
    one_line_error(invoke("run", "lesson-tiny", "--text", text), "70 tokens", "64", "--truncate")
    result = invoke("run", "lesson-tiny", "--text", text, "--truncate", "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["tokens"] == [list(text.encode())[:64]]  # the start is kept
    assert data["notes"] == [
        "--text was cut from 70 to 64 tokens by --truncate, keeping the first ones: "
        "max_seq_len of lesson-tiny is 64"]
    assert "cut from 70 to 64" in invoke("run", "lesson-tiny", "--text", text, "--truncate").stdout


def test_generate_truncate_keeps_the_prompts_end_and_leaves_room(invoke) -> None:
    prompt = "0123456789" * 6  # 60 ids; 64 - 8 new tokens leaves 56
    one_line_error(invoke("generate", "lesson-tiny", "--text", prompt, "--max-new-tokens", "8"),
                   "60 tokens", "56", "8 new tokens", "--truncate")
    result = invoke("generate", "lesson-tiny", "--text", prompt, "--max-new-tokens", "8",
                    "--truncate", "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["prompt_tokens"] == list(prompt.encode())[-56:]
    assert any("cut from 60 to 56" in note and "last" in note for note in data["notes"])


@pytest.mark.parametrize("args", [
    ["run", "lesson-tiny", "--tokens", "1,2", "--truncate"],
    ["run", "lesson-tiny", "--truncate"],
    ["generate", "lesson-tiny", "--tokens", "1,2", "--truncate"],
])
def test_truncate_without_a_text_is_refused(invoke, args: list[str]) -> None:
    one_line_error(invoke(*args), "--truncate")


def test_new_ids_past_the_byte_range_are_shown_and_explained(invoke, write_spec) -> None:
    spec = str(write_spec(WIDE_VOCAB))
    sampled = ["--max-new-tokens", "12", "--temperature", "1", "--seed", "0"]  # spread over 1,000 ids
    result = invoke("generate", spec, "--text", "Hi", *sampled, "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    new = data["tokens"]
    outside = [t for t in new if t >= 256]
    assert outside, "the seeded random model should produce ids >= 256 from a 1,000-id vocabulary"
    assert data["new_text"] == ByteTokenizer().decode(new)
    assert all(f"<{t}>" in data["new_text"] for t in outside)
    assert data["text"] == "Hi" + data["new_text"]
    assert any(f"{len(outside)} of {len(new)} new ids are >= 256" in n for n in data["notes"])
    table = invoke("generate", spec, "--text", "Hi", *sampled)
    assert table.exit_code == 0 and f"<{outside[0]}>" in table.stdout
    assert "new ids are >= 256" in table.stdout


def test_byte_range_ids_get_no_note(invoke) -> None:
    data = json.loads(invoke("generate", "lesson-tiny", "--text", "Hi", "--max-new-tokens", "4",
                             "-f", "json").stdout)
    assert not any(">= 256" in note for note in data["notes"])


def test_a_checkpoint_tokenizer_without_the_package_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec plus --weights DIR holding tokenizer.json: the tokenizer is asked for before any
    weight file is read, so the directory needs no safetensors for this check."""
    from tfcli.checkpoints import tokenizer
    from tfcli.analysis.generate import timed as generation

    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(tokenizer, "_tokenizers_installed", lambda: False)
    from tfcli.analysis.model_source import load_model

    model = load_model("lesson-tiny")
    moved = type(model)(model.spec, model.weights, model.dtype, str(tmp_path), str(tmp_path))
    with pytest.raises(BadInputError) as bad:
        generation.prompt_tokens(moved, "Hello", None)
    assert "pip install 'tfcli[hf]'" in str(bad.value)
    # --tokens needs no tokenizer: the ids run, shown without text rather than as wrong bytes
    assert generation.prompt_tokens(moved, None, "1,2").tokenizer is None

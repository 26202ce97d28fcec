"""A config.json is user input: any bytes, any JSON value in any field.

Every case ends in one BadInputError naming the file (and the field, where there is one), with
what it echoes bounded and escaped - never another exception, a hang, or a huge message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import MAX_MESSAGE, only_bad_input
from tests.checkpoints.test_configs import GPT2_CONFIG, LLAMA_CONFIG
from tfcli.checkpoints import spec_from_config, spec_from_config_dir
from tfcli.checkpoints.configs import DEFAULTS, MAX_CONFIG_BYTES, config_from_bytes
from tfcli.checkpoints.fields import MAX_SIZE
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec



def _refused(path: Path) -> str:
    with pytest.raises(BadInputError) as info:
        spec_from_config_dir(path)
    message = info.value.message
    assert len(message) < MAX_MESSAGE and "\n" not in message and message.isprintable()
    return message


def _write_bytes(tmp_path: Path, data: bytes) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.json").write_bytes(data)
    return tmp_path


HOSTILE_TEXT = [  # (config.json text, what the message says)
    ('{"model_type": "gpt2", "n_embd": 1' + "0" * 5000 + "}",
     "field 'n_embd': is too large (an integer of 5,001 digits"),
    ('{"model_type": "gpt2", "layer_norm_epsilon": 9' * 1 + "9" * 5000 + "}",
     "field 'layer_norm_epsilon': expected a finite number, got an integer of 5,001 digits"),
    ('{"model_type": "gpt2", "n_layer": 1000000000000000000000000000000}',
     "field 'n_layer': is too large (an integer of 31 digits"),
    ('{"model_type": "gpt2", "n_layer": ' + str(MAX_SIZE + 1) + "}",
     f"field 'n_layer': is too large ({MAX_SIZE + 1}; at most {MAX_SIZE:,})"),
    ('{"x": ' + "[" * 1000 + "]" * 1000 + "}", "nested too deeply"),
    ('{"model_type": "gpt2", "n_layer": 2, "n_layer": 12}', "key 'n_layer' appears twice"),
    ('{"model_type": "llama", "rope_scaling": {"type": "a", "type": "b"}}', "key 'type' appears twice"),
    ("[1, 2]", "must hold a JSON object, got list"),
    ('"gpt2"', "must hold a JSON object, got str"),
    ("", "cannot be read as JSON"),
    ('{"model_type": "gpt2", "n_embd": NaN}', "field 'n_embd': expected an integer, got nan"),
    ('{"model_type": "gpt2", "layer_norm_epsilon": -Infinity}', "expected a finite number, got -inf"),
    ('{"model_type": "gpt2", "layer_norm_epsilon": 1e999}', "expected a finite number, got inf"),
    ('{"model_type": "gpt2", "n_head": 2.5}', "field 'n_head': expected an integer, got 2.5"),
    ('{"model_type": "gpt2", "n_head": true}', "field 'n_head': expected an integer, got True"),
    ('{"model_type": "gpt2", "n_head": -2}', "field 'n_head': must be positive, got -2"),
    ('{"model_type": "gpt2", "n_head": 0}', "field 'n_head': must be positive, got 0"),
    ('{"model_type": "gpt2\\u001b[31m\\u0007"}', r"model_type 'gpt2\x1b[31m\x07' is not supported"),
    ('{"model_type": "' + "z" * 100_000 + '"}', "model_type 'zzzzzzzzzzzz"),
    ('{"model_type": "gpt2", "activation_function": "\\u001b]8;;x\\u0007' + "a" * 999 + '"}',
     r"activation_function '\x1b]8;;x\x07aaaa"),
    ('{"architectures": ' + json.dumps(["x"] * 400_000) + "}", "architectures ['x', 'x'"),
]


@pytest.mark.parametrize(("text", "problem"), HOSTILE_TEXT, ids=range(len(HOSTILE_TEXT)))
def test_hostile_config_text_is_one_bounded_message(tmp_path: Path, text: str, problem: str) -> None:
    path = _write_bytes(tmp_path / "m", text.encode())
    message = _refused(path)
    assert message.startswith(f"{path / 'config.json'}")
    assert problem in message


def test_a_huge_integer_in_a_field_tfcli_ignores_is_harmless(tmp_path: Path) -> None:
    text = json.dumps(GPT2_CONFIG)[:-1] + ', "pad_token_id": 1' + "0" * 5000 + "}"
    assert spec_from_config_dir(_write_bytes(tmp_path / "m", text.encode())).d_model == 8


def test_non_utf8_bytes(tmp_path: Path) -> None:
    path = _write_bytes(tmp_path / "m", b'{"model_type": "gpt2\xff"}')
    assert "not UTF-8 text (byte 20)" in _refused(path)


def test_a_file_over_the_cap_is_refused_without_parsing(tmp_path: Path) -> None:
    path = _write_bytes(tmp_path / "m", b" " * (MAX_CONFIG_BYTES + 1))
    assert "larger than 16 MiB" in _refused(path)


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = _write_bytes(tmp_path / "m", b"\xef\xbb\xbf" + json.dumps(GPT2_CONFIG).encode())
    assert spec_from_config_dir(path).d_model == 8


def test_fifo_and_directory_are_not_read(tmp_path: Path) -> None:
    fifo_dir = tmp_path / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "config.json")  # nobody writes: reading it would block forever
    assert "not a regular file" in _refused(fifo_dir)
    (tmp_path / "dir" / "config.json").mkdir(parents=True)  # a model directory's config.json
    assert "not a regular file" in _refused(tmp_path / "dir")
    with pytest.raises(BadInputError, match="/dev/zero: not a regular file"):
        spec_from_config_dir("/dev/zero")


def test_control_characters_in_the_name_never_reach_the_spec() -> None:
    spec = spec_from_config(GPT2_CONFIG | {"_name_or_path": "evil\x1b[2J"}, "/models/tiny")
    assert spec.name == "tiny"


# --- through the CLI: one line on stderr, exit 2 ----------------------------------------------


@pytest.mark.parametrize("command", ["import-config", "params", "validate"])
def test_duplicate_key_through_the_cli(invoke, tmp_path: Path, command: str) -> None:
    path = _write_bytes(tmp_path / "m", b'{"model_type": "gpt2", "n_embd": 8, "n_embd": 16}')
    result = invoke(command, str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "appearstwice" in "".join(result.output.split())


def test_fifo_config_does_not_hang_the_cli(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config.json")
    result = subprocess.run([sys.executable, "-m", "tfcli", "import-config", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "not a regular file" in result.stderr


# --- property tests: any JSON value in any field, any top level, any bytes --------------------

FIELDS = sorted({k for d in DEFAULTS.values() for k in d} | {
    "model_type", "architectures", "rope_parameters", "rope_scaling", "partial_rotary_factor",
    "scale_decoder_outputs", "_name_or_path", "is_decoder", "num_local_experts",
    "num_experts_per_tok"})
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-3, 70) |
           st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20) |
           st.sampled_from(["gpt2", "bert", "llama", "mistral", "mixtral", "t5", "silu", "relu",
                            "gated-gelu", "default", "linear", "LlamaModel", "T5EncoderModel"]))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=4),
                    max_leaves=8)
# every drawn set of fields is tried over each base: 6 configs per example, the same coverage
# for a sixth of hypothesis' own cost (which is most of the time here)
BASES = [{}, GPT2_CONFIG, LLAMA_CONFIG, {"model_type": "bert"}, {"model_type": "t5"},
         LLAMA_CONFIG | {"model_type": "mixtral"}]
def fast(n: int) -> settings:
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _sizes_bounded(spec: Spec) -> None:
    assert spec.n_layers <= MAX_SIZE and spec.vocab_size <= MAX_SIZE


@fast(500)
@given(fields=st.dictionaries(st.sampled_from(FIELDS), JSON, min_size=1, max_size=4))
def test_any_json_in_known_fields(fields: dict) -> None:
    for base in BASES:  # 3,000 configs in all
        only_bad_input(base | fields, _sizes_bounded)


@fast(300)
@given(value=JSON)
def test_any_json_top_level(value: object) -> None:
    only_bad_input(value, _sizes_bounded)


@fast(300)
@given(data=st.binary(max_size=64) | st.text(max_size=64).map(str.encode))
def test_any_bytes(data: bytes) -> None:
    try:
        spec_from_config(config_from_bytes(data, "c.json"), "x")
    except BadInputError as exc:
        assert len(exc.message) < MAX_MESSAGE and exc.message.isprintable()

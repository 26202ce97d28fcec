"""Red team, input FILES: a data-driven corpus of hostile spec files, config.json files,
tokenizer.json files, safetensors files and shard indexes, each run through every command that
takes a SPEC (params, trace, trace --execute, run, generate, validate, import-config,
depth-sweep SPEC).

The cases are cross products (every spec field x hostile values x commands, every config.json
key of every family x hostile JSON values x commands, ...) plus hypothesis over random
documents. Each case asserts the house contract for bad input: the documented exit code (2 bad
input, 1 a failed check, 0 where the input is actually fine - never 70, the internal-error
code), stderr one `tfcli: error:` line (a SpecError may list its problems on up to 11 more), no
traceback, no warning, no raw control byte (ESC, BEL, CR) on either stream, stderr under 4 KB,
and a bounded time (pytest-timeout). Runs go through the app's guarded click group in-process
(a few ms each), as tests/cli/test_option_errors.py does.
"""

from __future__ import annotations

import io
import json
import math
import re
import struct
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors
from tfcli.cli.app import app
from tfcli.core.errors import SpecError
from tfcli.spec.model import Spec
from tfcli.spec.load import parse_spec_text

GROUP = typer.main.get_command(app)
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\x9b]")  # ESC, BEL, CR, NUL, CSI ...; \n allowed
MAX_STDERR = 4096
MAX_SPEC_ERROR_LINES = 12  # the heading line, 10 problems and a count


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    warned: tuple[str, ...]


def invoke(*args: str) -> Ran:
    """The app run as main() runs it (the guard included), on in-memory streams; Python
    warnings are recorded rather than left to pytest, so a case that warns fails."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err = io.StringIO(), io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = GROUP.main(list(args), prog_name="tfcli", standalone_mode=False)
    finally:
        sys.stdout, sys.stderr = saved
    return Ran(code, out.getvalue(), err.getvalue(),
               tuple(f"{w.category.__name__}: {w.message}" for w in caught))


def check(result: Ran, allowed: tuple[int, ...] = (0, 1, 2), where: str = "",
          report: bool = False) -> Ran:
    """The house contract for one run (see the module docstring). `report`: validate, whose
    verdict on each spec is its output (exit 2 when any is bad, with nothing on stderr)."""
    context = (where, result.code, result.stderr[:600], result.stdout[:300])
    assert result.code in allowed, context
    assert not result.warned, (where, result.warned)
    for stream in (result.stdout, result.stderr):
        assert "Traceback" not in stream, context
        assert not CONTROL.search(stream), (where, CONTROL.search(stream), stream[:400])
    assert "Warning" not in result.stderr and "internal error" not in result.stderr, context
    assert len(result.stderr.encode()) < MAX_STDERR, (where, len(result.stderr))
    if result.code != 0 and not (report and result.stderr == ""):
        lines = result.stderr.splitlines()
        errors = [i for i, line in enumerate(lines) if line.startswith("tfcli: error:")]
        assert len(errors) == 1, context
        # notes may precede the error; a SpecError's problems follow it, nothing else does
        assert len(lines) - errors[0] <= MAX_SPEC_ERROR_LINES, context
    else:
        assert "tfcli: error:" not in result.stderr, context
    return result


# --- spec files -------------------------------------------------------------------------------

BASE_DECODER = {
    "name": "hostile", "family": "decoder", "vocab_size": 300, "max_seq_len": 32,
    "d_model": 16, "n_heads": 4, "n_layers": 2, "d_ff": 32,
}
BASE_ENC_DEC = BASE_DECODER | {"family": "encoder-decoder", "positions": "relative",
                               "norm": "rmsnorm", "bias": False}
BASE_ENCODER = BASE_DECODER | {"family": "encoder", "lm_head": False, "norm_placement": "post",
                               "embedding_norm": True, "type_vocab_size": 2}

# hostile values as YAML text, by the kind of field they are aimed at
MARKUP = ['"[/]"', '"[link=file:///etc/passwd]x[/link]"', '"[blink]x[/blink]"', '"[bold red]x"',
          '"\\e[31mred\\e[0m"', '"\\e]0;pwned\\a"', '"a\\rb"', '"\\x9b2J"', '"\\u202eevil"',
          '"\\0nul"', f'"{"x" * 5000}"', '"[/INST]"', '"\\\\[/]"']
COMMON = ["null", "~", "[]", "{}", "[1, 2]", "{a: 1}", "''", "!!binary aGk=", "*undefined",
          "&a 1", "!!python/object:os.system x", "2001-01-01", "0x10", "0o17", "1_0", "1:0",
          "020", "yes", "Off", ".nan", ".inf", "-.inf", "1e400"] + MARKUP[:6]
INTS = ["0", "-1", "-0", "1.5", "1.0", "2.0e3", "1e3", str(10**30), str(10**12), str(2**31),
        str(2**63), str(2**64 + 1), "9" * 31, "+5", "'16'", "true", "false", "3"]
FLOATS = ["0", "0.0", "-1", "-0.0", "5e-324", "1e-320", "1e308", "1.7976931348623157e308",
          str(10**30), str(10**400), "1e-45", "'1e-5'", "true", "1", "1e-5"]
TEXTS = ["123", "1.5", "true"] + MARKUP
BOOLS = ["1", "0", "'true'", "True", "TRUE", "y", "n", "on"]
LITERAL_TYPOS = ["GELU", "swiglue", "Decoder", "layer_norm", "rms", "pre-ln", "rotary",
                 "relu ", " relu", "gelu\\u200b", "1"]


def _field_kind(name: str) -> str:
    annotation = str(Spec.model_fields[name].annotation)
    if "Literal" in annotation or name in {"family", "activation", "norm", "norm_placement",
                                           "positions"}:
        return "literal"
    for kind in ("bool", "float", "int", "str"):
        if kind in annotation:
            return kind
    return "str"


COMMON_PER_FIELD = 8  # COMMON's values are YAML-level: each field gets a rotating share


def _values_for(name: str, index: int) -> list[str]:
    kind = _field_kind(name)
    pool = {"int": INTS, "float": FLOATS + INTS[:8], "str": TEXTS, "bool": BOOLS + INTS[:3],
            "literal": LITERAL_TYPOS + TEXTS[:6]}[kind]
    start = index * COMMON_PER_FIELD
    return pool + [COMMON[(start + k) % len(COMMON)] for k in range(COMMON_PER_FIELD)]


def _base_for(name: str) -> dict[str, object]:
    if name in ("n_encoder_layers", "n_decoder_layers", "relative_buckets",
                "relative_max_distance", "tied_head_rescale"):
        return BASE_ENC_DEC
    if name in ("pooler", "type_vocab_size", "embedding_norm"):
        return BASE_ENCODER
    return BASE_DECODER


def spec_yaml(fields: dict[str, object], raw: dict[str, str] | None = None) -> str:
    """A spec document: `fields` dumped as JSON scalars (valid YAML), `raw` as YAML text."""
    lines = [f"{k}: {json.dumps(v)}" for k, v in fields.items() if k not in (raw or {})]
    lines += [f"{k}: {v}" for k, v in (raw or {}).items()]
    return "\n".join(lines) + "\n"


def _field_cases() -> list[tuple[str, str]]:
    cases = []
    for index, name in enumerate(Spec.model_fields):
        for value in _values_for(name, index):
            cases.append((f"{name}={value[:24]}", spec_yaml(_base_for(name), {name: value})))
    return cases


# Inconsistent or extreme but well-typed combinations, each a full document's overrides.
COMBOS: list[dict[str, object]] = [
    {"n_heads": 3}, {"n_heads": 32}, {"n_heads": 17, "d_head": 8}, {"n_kv_heads": 8},
    {"n_kv_heads": 3}, {"n_kv_heads": 4, "n_heads": 4}, {"d_model": 10**9, "n_layers": 1},
    {"d_model": 2**31 - 1, "n_heads": 1}, {"d_model": 10**12, "n_heads": 1},
    {"vocab_size": 1}, {"vocab_size": 255}, {"vocab_size": 256}, {"vocab_size": 10**12},
    {"max_seq_len": 1}, {"max_seq_len": 10**12}, {"max_seq_len": 10**12, "positions": "rope"},
    {"positions": "rope", "rope_theta": 1e-300}, {"positions": "rope", "rope_theta": 1e300},
    {"positions": "rope", "d_head": 3, "n_heads": 4}, {"positions": "rope", "rope_theta": 1},
    {"positions": "sinusoidal", "d_model": 15, "n_heads": 3}, {"positions": "none"},
    {"positions": "relative"}, {"positions": "relative", "relative_buckets": 10**9},
    {"positions": "relative", "relative_max_distance": 1}, {"attention_scale": 1e300},
    {"attention_scale": 1e-300}, {"attention_scale": 1e30}, {"sliding_window": 1},
    {"sliding_window": 10**12}, {"sliding_window": 2**63 - 1}, {"d_ff": 1}, {"d_ff": 10**12},
    {"n_layers": 10**9}, {"n_layers": 2**31}, {"n_layers": 10**15, "d_model": 10**6},
    {"n_experts": 8}, {"n_experts": 8, "experts_per_token": 9},
    {"n_experts": 10**9, "experts_per_token": 1}, {"n_experts": 4, "experts_per_token": 4},
    {"n_experts": 0, "experts_per_token": 1}, {"d_head": 10**9}, {"d_head": 1},
    {"norm": "none"}, {"norm": "none", "final_norm": True}, {"norm": "none", "norm_placement": "post"},
    {"norm_eps": 1.0}, {"norm_eps": 1.1754943508222875e-38}, {"init_std": 1e-6},
    {"init_std": 1e3}, {"init_std": 1e3, "n_layers": 8}, {"lm_head": False},
    {"lm_head": False, "tie_embeddings": False}, {"tie_embeddings": False},
    {"tied_head_rescale": True}, {"pooler": True}, {"type_vocab_size": 10**12},
    {"type_vocab_size": 2}, {"embedding_norm": True}, {"body_only": "x" * 201},
    {"body_only": "[/]\x1b[31m"}, {"n_encoder_layers": 2}, {"family": "encoder"},
    {"family": "encoder", "sliding_window": 4}, {"family": "encoder-decoder"},
    {"family": "encoder-decoder", "n_encoder_layers": 10**9, "n_decoder_layers": 1},
    {"family": "encoder-decoder", "positions": "relative", "n_decoder_layers": 1},
    {"activation": "swiglu", "d_ff": 1}, {"activation": "geglu", "ffn_bias": True, "bias": False},
    {"name": "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\"}, {"name": "[/]"},
    {"name": "a" * 100000}, {"description": "[link=x]" * 1000}, {"source": "\x07" * 50},
    {"name": "\u202e\u2066tsil"}, {"name": "\ud800"} if False else {"name": "\U0001f600" * 40},
]


def _combo_cases() -> list[tuple[str, str]]:
    return [(f"combo{i}:{str(c)[:40]}", spec_yaml(BASE_DECODER | c)) for i, c in enumerate(COMBOS)]


# Documents that are not specs at all, or hostile as YAML.
DOCUMENTS: list[tuple[str, str]] = [
    ("empty", ""), ("null", "null\n"), ("list", "- 1\n- 2\n"), ("scalar", "42\n"),
    ("string", "'[/]'\n"), ("markup-key", spec_yaml(BASE_DECODER, {'"[/]"': "1"})),
    ("esc-key", spec_yaml(BASE_DECODER, {'"\\e[31mred"': "1"})),
    ("int-key", spec_yaml(BASE_DECODER, {"1": "1"})), ("null-key", spec_yaml(BASE_DECODER, {"~": "1"})),
    ("list-key", spec_yaml(BASE_DECODER, {"? [1, 2]\n": ""})),
    ("dup-key", spec_yaml(BASE_DECODER) + "d_model: 32\n"),
    ("dup-key-markup", spec_yaml(BASE_DECODER) + "name: '[/]'\n"),
    ("two-docs", spec_yaml(BASE_DECODER) + "---\n" + spec_yaml(BASE_DECODER)),
    ("bom", "\ufeff" + spec_yaml(BASE_DECODER)), ("crlf", spec_yaml(BASE_DECODER).replace("\n", "\r\n")),
    ("tab-indent", "name: x\n\tfamily: decoder\n"), ("raw-esc", "name: \x1b[31mred\n"),
    ("raw-bel", spec_yaml(BASE_DECODER) + "description: \x07\n"),
    ("raw-c1", "name: \x85\x9b\n"), ("lone-surrogate-escape", spec_yaml(BASE_DECODER, {"name": '"\\ud800"'})),
    ("unclosed", "name: [\n"), ("unclosed-quote", "name: '\n"), ("bad-indent", "a:\n b: 1\n  c: 2\n"),
    ("merge", "base: &b {d_model: 16}\n<<: *b\n" + spec_yaml(BASE_DECODER)),
    ("merge-bad", spec_yaml(BASE_DECODER) + "<<: 1\n"), ("merge-markup", spec_yaml(BASE_DECODER) + "<<: {'[/]': 1}\n"),
    ("anchor-long", spec_yaml(BASE_DECODER, {"description": "&" + "a" * 50000 + " x"})),
    ("alias-undefined", spec_yaml(BASE_DECODER, {"description": "*" + "[/]" * 1000})),
    ("directive", "%YAML 1.1\n---\n" + spec_yaml(BASE_DECODER)),
    ("directive-bad", "%YAML 9.9\n---\n" + spec_yaml(BASE_DECODER)),
    ("tag-directive", "%TAG ! tag:evil:\n---\n" + spec_yaml(BASE_DECODER, {"d_model": "!x 16"})),
    ("deep-flow", spec_yaml(BASE_DECODER, {"description": "[" * 5000 + "]" * 5000})),
    ("deep-block", "a:\n" + "".join(" " * i + "- \n" for i in range(1, 300))),
    ("many-keys", spec_yaml(BASE_DECODER) + "".join(f"k{i}: {i}\n" for i in range(20000))),
    ("long-line", "name: " + "x" * 250000 + "\n"),
    ("long-key", spec_yaml(BASE_DECODER) + "x" * 200000 + ": 1\n"),
    ("huge-int-key", spec_yaml(BASE_DECODER) + "9" * 5000 + ": 1\n"),
    ("huge-float", spec_yaml(BASE_DECODER, {"norm_eps": "0." + "0" * 5000 + "1"})),
    ("float-digits", spec_yaml(BASE_DECODER, {"norm_eps": "1" * 5000 + ".0"})),
    ("int-5000-digits", spec_yaml(BASE_DECODER, {"d_model": "9" * 5000})),
    ("neg-int-5000", spec_yaml(BASE_DECODER, {"d_model": "-" + "9" * 5000})),
    ("hex-huge", spec_yaml(BASE_DECODER, {"d_model": "0x" + "f" * 5000})),
    ("sexagesimal", spec_yaml(BASE_DECODER, {"d_model": "1:00:00"})),
    ("octal-like", spec_yaml(BASE_DECODER, {"n_layers": "012"})),
    ("nul-in-file", spec_yaml(BASE_DECODER) + "description: a\x00b\n"),
    ("latin1", (spec_yaml(BASE_DECODER) + "description: caf\xe9\n")),
]


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    else:
        path.write_bytes(text)
    return path


SPEC_COMMANDS: list[tuple[str, ...]] = [
    ("params", "{}"), ("params", "{}", "-f", "json"), ("params", "{}", "-f", "csv"),
    ("trace", "{}"), ("trace", "{}", "--execute", "-f", "json"), ("run", "{}"),
    ("run", "{}", "--text", "hi", "-f", "json"), ("generate", "{}", "--text", "hi", "--max-new-tokens", "2"),
    ("generate", "{}", "--tokens", "1,2", "--max-new-tokens", "2", "-f", "json"),
    ("validate", "{}"), ("validate", "{}", "-f", "json"), ("import-config", "{}"),
    ("depth-sweep", "{}", "--depths", "1,2", "-q"), ("depth-sweep", "{}", "--depths", "2", "-q", "-f", "csv"),
]


HEAVY = frozenset({"run", "generate", "depth-sweep", "--execute"})
MAX_HEAVY_PARAMS = 10**6  # accepted specs larger than this get the analytic commands only


def rotation(commands: list[tuple[str, ...]], index: int, count: int,
             small: bool = True) -> list[tuple[str, ...]]:
    """`count` of `commands` for case `index`, rotating so that across the corpus every command
    sees every kind of case; a large model (a config that omits its sizes gets transformers'
    4096-wide defaults) skips the commands that run it, whose figures are the work asked for."""
    pool = [c for c in commands if small or not HEAVY & set(c)]
    return [pool[(index * count + k) % len(pool)] for k in range(count)]


def _small(spec: Spec | None) -> bool:
    from tfcli.spec.counts import total_parameters

    return spec is not None and total_parameters(spec) <= MAX_HEAVY_PARAMS and \
        spec.total_layers <= 16


def _loaded(text: str) -> tuple[bool, Spec | None]:
    """(accepted, the spec when small enough to run): the loader's verdict decides how many
    commands a case gets - a refused spec is refused on the path every command shares."""
    try:
        spec = parse_spec_text(text)
    except SpecError:
        return False, None
    except Exception:  # noqa: BLE001 - a crash of the loader is the CLI's to report: run it
        return True, None
    return True, spec


ALL_SPEC_CASES = _field_cases() + _combo_cases() + DOCUMENTS


def _run_spec_case(tmp_path: Path, index: int, name: str, text: str) -> None:
    path = _write(tmp_path / "hostile.yaml", text)
    accepted, spec = _loaded(text)
    for template in rotation(SPEC_COMMANDS, index, 2, small=not accepted or _small(spec)):
        args = [str(path) if part == "{}" else part for part in template]
        result = check(invoke(*args), where=f"{name}: {' '.join(template)}",
                       report=args[0] == "validate")
        if not accepted and args[0] != "import-config":
            assert result.code == 2, (name, args, result.stderr[:300])


# The spec corpus runs in chunks (one test each) so a failure names its chunk and pytest's
# per-test timeout bounds each chunk.
CHUNK = 60
SPEC_CHUNKS = [ALL_SPEC_CASES[i:i + CHUNK] for i in range(0, len(ALL_SPEC_CASES), CHUNK)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("chunk", range(len(SPEC_CHUNKS)))
def test_hostile_spec_files_through_every_command(tmp_path: Path, chunk: int) -> None:
    failures = []
    for offset, (name, text) in enumerate(SPEC_CHUNKS[chunk]):
        try:
            _run_spec_case(tmp_path, chunk * CHUNK + offset, name, text)
        except AssertionError as exc:
            failures.append(f"{name}: {str(exc)[:700]}")
    assert not failures, f"{len(failures)} failing cases:\n" + "\n".join(failures[:15])


# --- config.json ------------------------------------------------------------------------------

SMALL = {"vocab_size": 300}
BASE_CONFIGS: dict[str, dict[str, object]] = {
    "gpt2": {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 300,
             "n_positions": 32, "n_embd": 16, "n_layer": 2, "n_head": 4},
    "bert": {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": 300,
             "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 32, "max_position_embeddings": 32},
    "llama": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 300,
              "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32},
    "t5": {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "vocab_size": 300,
           "d_model": 16, "d_kv": 4, "d_ff": 32, "num_layers": 2, "num_heads": 4, "n_positions": 32},
}
BASE_CONFIGS["mistral"] = BASE_CONFIGS["llama"] | {"model_type": "mistral", "sliding_window": 8,
                                                   "architectures": ["MistralForCausalLM"]}
BASE_CONFIGS["mixtral"] = BASE_CONFIGS["mistral"] | {
    "model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "num_local_experts": 4,
    "num_experts_per_tok": 2}


class Raw(str):
    """JSON text put into a config as written (a 5,000-digit literal json.dumps cannot hold)."""


JSON_VALUES: list[object] = [
    0, -1, 1.5, 16.0, 1e30, 10**30, 2**31, -(2**63), "16", True, False, None, [], {"a": 1},
    math.nan, math.inf, 1e-320, -0.0, "[/]", "\x1b[31m\x07\r", "x" * 5000, Raw("9" * 5000),
    Raw("1e999"), Raw("[" * 3000 + "]" * 3000),
]
# Mistral and Mixtral share Llama's reader: beyond the keys of their own, they get its cases.
OWN_KEYS = {"mistral": ("model_type", "architectures", "sliding_window"),
            "mixtral": ("model_type", "architectures", "num_local_experts", "num_experts_per_tok")}
ARCHITECTURE_VALUES: list[object] = [
    [], "GPT2LMHeadModel", [1], [None], ["[/]"], ["\x1b]0;pwned\x07"], ["x" * 5000],
    ["X"] * 100_000, {"a": 1}, ["GPT2LMHeadModel", "BertModel"], ["BertForMaskedLM"],
    ["LlamaForSequenceClassification"], ["T5EncoderModel"], ["GPT2DoubleHeadsModel"],
    ["MixtralForCausalLM"], ["LlamaForCausalLM"], [""], ["T5Model"],
]
MODEL_TYPE_VALUES: list[object] = ["GPT2", "gpt-2", "falcon", "", "[/]", "\x1b[2J", 1, None,
                                   ["gpt2"], "x" * 5000]
ROPE_VALUES: list[object] = [
    {"rope_type": "yarn"}, {"rope_type": "[/]\x1b"}, {"rope_theta": 0}, {"rope_theta": -1},
    {"rope_theta": "1e4"}, {"rope_theta": math.nan}, {"rope_theta": 1e308}, {"rope_type": ["x"]},
    {"partial_rotary_factor": 0.5}, {"partial_rotary_factor": "1"}, {"type": "linear"},
    {"rope_type": "default", "rope_theta": 5e-324}, "x", [], 1,
]
EXTRA_KEYS = ("model_type", "architectures", "rope_parameters", "rope_scaling",
              "partial_rotary_factor", "scale_decoder_outputs", "_name_or_path", "head_dim",
              "num_local_experts", "num_experts_per_tok")


def _config_text(config: dict[str, object]) -> str:
    raws = {k: v for k, v in config.items() if isinstance(v, Raw)}
    text = json.dumps({k: (f"@raw{k}" if k in raws else v) for k, v in config.items()})
    for key, value in raws.items():
        text = text.replace(json.dumps(f"@raw{key}"), value)
    return text


def _values_for_key(key: str) -> list[object]:
    if key == "architectures":
        return ARCHITECTURE_VALUES
    if key == "model_type":
        return MODEL_TYPE_VALUES + JSON_VALUES[:6]
    if key in ("rope_parameters", "rope_scaling"):
        return ROPE_VALUES
    return JSON_VALUES


def _config_cases() -> list[tuple[str, str]]:
    from tfcli.checkpoints.configs import DEFAULTS

    cases = []
    for kind, base in BASE_CONFIGS.items():
        keys = OWN_KEYS.get(kind) or dict.fromkeys([*base, *DEFAULTS[kind], *EXTRA_KEYS])
        for key in keys:
            for value in _values_for_key(key):
                cases.append((f"{kind}.{key}={str(value)[:20]!r}", _config_text(base | {key: value})))
            if key in base:
                cases.append((f"{kind}.{key} missing",
                              _config_text({k: v for k, v in base.items() if k != key})))
    cases += [
        ("not-json", "{"), ("empty", ""), ("list", "[1]"), ("string", '"x"'), ("null", "null"),
        ("dup", '{"model_type": "gpt2", "model_type": "bert"}'), ("bom-nested", "\ufeff{}"),
        ("latin1", b'{"model_type": "gpt\xe9"}'.decode("latin-1")),
        ("control-in-json", '{"model_type": "gpt2\x1b"}'),
        ("deep", "[" * 100_000 + "]" * 100_000),
        ("many-keys", json.dumps(BASE_CONFIGS["gpt2"] | {f"k{i}": i for i in range(100_000)})),
        ("nan-everywhere", json.dumps({k: math.nan for k in BASE_CONFIGS["llama"]} |
                                      {"model_type": "llama"})),
    ]
    return cases


DIR_COMMANDS: list[tuple[str, ...]] = [
    ("params", "{}"), ("params", "{}", "-f", "csv"), ("import-config", "{}"), ("validate", "{}"),
    ("trace", "{}", "-f", "json"), ("trace", "{}", "--execute"), ("run", "{}", "--tokens", "1,2"),
    ("generate", "{}", "--tokens", "1", "--max-new-tokens", "2", "-f", "json"),
    ("depth-sweep", "{}", "--depths", "1,2", "-q", "-f", "json"),
]


def _config_loaded(directory: Path) -> tuple[bool, Spec | None]:
    from tfcli.checkpoints import spec_from_config_dir
    from tfcli.core.errors import TfcliError

    try:
        spec = spec_from_config_dir(directory)
    except TfcliError:
        return False, None
    except Exception:  # noqa: BLE001 - a crash is for the CLI run to report: run it
        return True, None
    return True, spec


ALL_CONFIG_CASES = _config_cases()
CONFIG_CHUNKS = [ALL_CONFIG_CASES[i:i + 120] for i in range(0, len(ALL_CONFIG_CASES), 120)]


def _run_dir_case(directory: Path, index: int, name: str, commands: list[tuple[str, ...]],
                  count: int = 1, allowed: tuple[int, ...] = (0, 1, 2)) -> None:
    accepted, spec = _config_loaded(directory)
    for template in rotation(commands, index, count, small=not accepted or _small(spec)):
        args = [str(directory) if part == "{}" else part for part in template]
        result = check(invoke(*args), allowed, where=f"{name}: {' '.join(template)}",
                       report=args[0] == "validate")
        if not accepted:
            assert result.code == 2, (name, template, result.stderr[:300])


def _run_config_case(tmp_path: Path, index: int, name: str, text: str) -> None:
    directory = tmp_path / "model"
    directory.mkdir(exist_ok=True)
    (directory / "config.json").write_bytes(text.encode("utf-8", errors="surrogatepass"))
    _run_dir_case(directory, index, name, DIR_COMMANDS)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("chunk", range(len(CONFIG_CHUNKS)))
def test_hostile_config_json_through_every_command(tmp_path: Path, chunk: int) -> None:
    failures = []
    for offset, (name, text) in enumerate(CONFIG_CHUNKS[chunk]):
        try:
            _run_config_case(tmp_path, chunk * 120 + offset, name, text)
        except AssertionError as exc:
            failures.append(f"{name}: {str(exc)[:700]}")
    assert not failures, f"{len(failures)} failing cases:\n" + "\n".join(failures[:15])


# --- safetensors files, shard indexes and tokenizer.json ---------------------------------------

WIDE = 300  # a vocabulary the byte tokenizer fits in, so --text runs too
WIDE_CONFIG = GPT2_CONFIG | {"vocab_size": WIDE}


def _tensors() -> dict[str, np.ndarray]:
    tensors = gpt2_tensors(np.random.default_rng(0))
    wte = np.random.default_rng(1).standard_normal((WIDE, tensors["transformer.wte.weight"].shape[1]))
    return tensors | {"transformer.wte.weight": wte.astype(np.float32)}


def _safetensors(header: object, data: bytes = b"", length: int | None = None) -> bytes:
    text = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _valid_file(tmp: Path) -> bytes:
    save_file(_tensors(), str(tmp / "valid.safetensors"))
    return (tmp / "valid.safetensors").read_bytes()


def _header_of(blob: bytes) -> tuple[dict, bytes]:
    (length,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + length]), blob[8 + length:]


def _edited(blob: bytes, edit: Callable[[dict], object]) -> bytes:
    header, data = _header_of(blob)
    result = edit(header)
    return _safetensors(header if result is None else result, data)


NAME = "transformer.ln_f.bias"
WTE = "transformer.wte.weight"


def _set(name: str, key: str, value: object) -> Callable[[dict], None]:
    return lambda header: header[name].__setitem__(key, value)


def _safetensors_cases(blob: bytes) -> list[tuple[str, bytes]]:
    header, data = _header_of(blob)
    size = len(blob)
    cases: list[tuple[str, bytes]] = [(f"truncated-{n}", blob[:n]) for n in
                                      (0, 1, 7, 8, 9, 40, size // 2, size - 1)]
    cases += [(f"length-{n}", _safetensors(header, data, n)) for n in
              (0, 1, 2**64 - 1, 2**63, size, size - 8, 100 * 2**20 + 1)]
    cases += [(f"header-{i}", _safetensors(h, data)) for i, h in enumerate([
        b"not json", b"[]", b'"x"', b"null", b"{" * 5000, b'{"a": 1, "a": 2}', b"\xff\xfe",
        b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', b"{}",
        b'{"__metadata__": "x"}', b"[" * 100000 + b"]" * 100000, b'{"\\u001b[31m": 1}'])]
    edits: list[tuple[str, Callable[[dict], object]]] = [
        *[(f"dtype-{v!r}"[:20], _set(NAME, "dtype", v)) for v in
          ("F4", "X", 123, None, "I64", "BOOL", "U8", "F8_E4M3", "BF16", "F16", "[/]\x1b", "f32")],
        *[(f"shape-{v!r}"[:24], _set(NAME, "shape", v)) for v in
          ([], [0], [4], [8, 1], [-8], [2**62, 2**62], "8", None, [8.0], [True] * 8, [1] * 9)],
        *[(f"offsets-{v!r}"[:24], _set(NAME, "data_offsets", v)) for v in
          ([0, 0], [8, 0], [0, 2**64], [-4, 28], [0], "0,32", [0.0, 32.0], None)],
        ("wte-transposed", _set(WTE, "shape", [8, WIDE])),
        ("wte-rows-missing", lambda h: h[WTE].__setitem__("shape", [WIDE // 2, 16])),
        ("missing-tensor", lambda h: h.pop(NAME)),
        ("missing-wte", lambda h: h.pop(WTE)),
        ("extra-tensor", lambda h: h.__setitem__("transformer.h.9.attn.bias", h[NAME])),
        ("extra-hostile-name", lambda h: h.__setitem__("[/]\x1b]0;x\x07" + "y" * 3000, h[NAME])),
        ("zero-size-extra", lambda h: h.__setitem__("transformer.extra", {
            "dtype": "F32", "shape": [0, 8], "data_offsets": [0, 0]})),
        ("entry-not-object", lambda h: h.__setitem__(NAME, [1, 2])),
        ("metadata-hostile", lambda h: h.__setitem__("__metadata__", {"format": ["[/]"]})),
        ("all-zero-size", lambda h: {k: {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
                                     for k in h}),
        ("many-entries", lambda h: h | {f"junk.{i}": h[NAME] for i in range(20000)}),
    ]
    cases += [(name, _edited(blob, edit)) for name, edit in edits]
    return cases


CHECKPOINT_COMMANDS: list[tuple[str, ...]] = [
    ("run", "{}", "--tokens", "1,2"), ("run", "{}", "--text", "hi", "-f", "json"),
    ("generate", "{}", "--tokens", "1", "--max-new-tokens", "2", "-f", "json"),
    ("generate", "{}", "--text", "hi", "--max-new-tokens", "2"),
    ("run", "@spec", "--weights", "{}", "--tokens", "1,2", "-f", "csv"),
    ("params", "{}"), ("trace", "{}", "--execute", "-f", "json"),
]


def _run_checkpoint(directory: Path, name: str, commands: list[tuple[str, ...]] = CHECKPOINT_COMMANDS,
                    allowed: tuple[int, ...] = (0, 1, 2)) -> list[Ran]:
    spec = directory.parent / "spec.yaml"
    if not spec.exists():
        spec.write_text(invoke("import-config", str(directory)).stdout or spec_yaml(BASE_DECODER))
    results = []
    for template in commands:
        args = [str(directory) if p == "{}" else str(spec) if p == "@spec" else p for p in template]
        results.append(check(invoke(*args), allowed, where=f"{name}: {' '.join(template)}"))
    return results


@pytest.fixture(scope="module")
def valid_blob(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _valid_file(tmp_path_factory.mktemp("blob"))


def _model_dir(root: Path, files: dict[str, bytes | str]) -> Path:
    directory = root / "model"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(WIDE_CONFIG))
    for file, content in files.items():
        _write(directory / file, content)
    return directory


@pytest.mark.timeout(90)
def test_hostile_safetensors_files(tmp_path: Path, valid_blob: bytes) -> None:
    failures = []
    cases = _safetensors_cases(valid_blob)
    for index, (name, blob) in enumerate(cases):
        directory = _model_dir(tmp_path / str(index), {"model.safetensors": blob})
        try:
            _run_checkpoint(directory, name, rotation(CHECKPOINT_COMMANDS, index, 2))
        except AssertionError as exc:
            failures.append(f"{name}: {str(exc)[:600]}")
    assert len(cases) > 60
    assert not failures, f"{len(failures)} failing cases:\n" + "\n".join(failures[:15])


def test_the_valid_checkpoint_runs(tmp_path: Path, valid_blob: bytes) -> None:
    """The corpus' starting point is fine: every command exits 0 on it."""
    directory = _model_dir(tmp_path, {"model.safetensors": valid_blob})
    assert [r.code for r in _run_checkpoint(directory, "valid")] == [0] * len(CHECKPOINT_COMMANDS)


def _index(weight_map: object) -> str:
    return json.dumps({"metadata": {}, "weight_map": weight_map})


def _index_cases(names: list[str]) -> list[tuple[str, dict[str, bytes | str]]]:
    good = {n: "shard.safetensors" for n in names}
    hostile_files = ["../shard.safetensors", "/etc/passwd", "", "a\x00b", "C:\\shard",
                     "sub/../../x.safetensors", "x" * 5000, "[/]\x1b[31m", "config.json",
                     ".", "missing.safetensors", "~/x", "%2e%2e/x"]
    cases: list[tuple[str, dict[str, bytes | str]]] = []
    for file in hostile_files:
        cases.append((f"file={file[:20]!r}", {"model.safetensors.index.json":
                      _index(good | {names[0]: file})}))
    for value in ([], "x", None, 1, ["shard.safetensors"], {"a": 1}, {names[0]: 1},
                  {names[0]: None}, {names[0]: ["shard.safetensors"]}, {}):
        cases.append((f"weight_map={str(value)[:20]!r}", {"model.safetensors.index.json": _index(value)}))
    for text in ("", "{", "[]", "null", '{"weight_map": 1, "weight_map": {}}', "[" * 100000,
                 '{"weight_map": ' * 5000):
        cases.append((f"index-text={text[:12]!r}", {"model.safetensors.index.json": text}))
    cases.append(("maps-to-lacking-shard", {"model.safetensors.index.json":
                  _index(good | {"transformer.h.7.extra": "shard.safetensors"})}))
    cases.append(("partial-map", {"model.safetensors.index.json": _index({names[0]: "shard.safetensors"})}))
    cases.append(("shard-is-dir", {"model.safetensors.index.json": _index(good | {names[0]: "d"})}))
    return cases


@pytest.mark.timeout(60)
def test_hostile_shard_indexes(tmp_path: Path, valid_blob: bytes) -> None:
    names = sorted(_header_of(valid_blob)[0])
    failures = []
    for index, (name, files) in enumerate(_index_cases(names)):
        directory = _model_dir(tmp_path / str(index), {"shard.safetensors": valid_blob, **files})
        (directory / "d").mkdir(exist_ok=True)
        try:
            results = _run_checkpoint(directory, name, rotation(CHECKPOINT_COMMANDS[:5], index, 2))
            assert all(r.code == 2 for r in results), (name, [r.stderr[:200] for r in results])
            assert not any("root:" in r.stdout + r.stderr for r in results), name  # /etc/passwd
        except AssertionError as exc:
            failures.append(f"{name}: {str(exc)[:600]}")
    assert not failures, f"{len(failures)} failing cases:\n" + "\n".join(failures[:15])


def _tokenizer_json(vocab: dict[str, int]) -> str:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = Tokenizer(WordLevel(vocab, unk_token=next(iter(vocab))))
    tokenizer.pre_tokenizer = Whitespace()
    return tokenizer.to_str()


def _tokenizer_cases() -> list[tuple[str, str | bytes]]:
    small = {"[UNK]": 0, "hi": 1, "there": 2}
    beyond = {"[UNK]": 0, "hi": WIDE + 5, "there": 10**6}  # ids past the model's vocabulary
    hostile = {"[UNK]": 0, "hi": 1, "[/]": 2, "\x1b[31m": 3, "[link=x]": 4, "\x07": 5, "\r": 6}
    hostile |= {f"[/INST]{i}": i for i in range(7, WIDE)}
    return [
        ("not-json", "{"), ("empty", ""), ("json-list", "[]"), ("json-object", "{}"),
        ("json-string", '"x"'), ("not-a-tokenizer", '{"model": {"type": "Nope"}}'),
        ("binary", b"\x00\xff" * 100), ("deep", "[" * 100000), ("small-vocab", _tokenizer_json(small)),
        ("ids-beyond-vocab", _tokenizer_json(beyond)), ("hostile-tokens", _tokenizer_json(hostile)),
        ("huge", " " * (40 * 2**20)),
    ]


TOKENIZER_COMMANDS: list[tuple[str, ...]] = [
    ("run", "{}", "--text", "hi there"), ("run", "{}", "--text", "hi", "-f", "csv"),
    ("generate", "{}", "--text", "hi", "--max-new-tokens", "3"),
    ("generate", "{}", "--text", "hi there", "--max-new-tokens", "2", "-f", "json"),
    ("run", "{}", "--tokens", "1,2"),
]


@pytest.mark.timeout(60)
def test_hostile_tokenizer_json(tmp_path: Path, valid_blob: bytes) -> None:
    failures = []
    for index, (name, content) in enumerate(_tokenizer_cases()):
        directory = _model_dir(tmp_path / str(index), {"model.safetensors": valid_blob,
                                                      "tokenizer.json": content})
        try:
            _run_checkpoint(directory, name, TOKENIZER_COMMANDS)
        except AssertionError as exc:
            failures.append(f"{name}: {str(exc)[:600]}")
    assert not failures, f"{len(failures)} failing cases:\n" + "\n".join(failures[:15])


# --- hypothesis: random spec documents from the hostile pools ----------------------------------

_POOL = sorted(set(INTS + FLOATS + TEXTS + BOOLS + LITERAL_TYPOS + COMMON))


@pytest.mark.timeout(60)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=st.dictionaries(st.sampled_from(sorted(Spec.model_fields)), st.sampled_from(_POOL),
                              max_size=6),
       base=st.sampled_from([BASE_DECODER, BASE_ENCODER, BASE_ENC_DEC]),
       command=st.sampled_from(SPEC_COMMANDS))
def test_random_hostile_specs(tmp_path: Path, fields: dict[str, str], base: dict[str, object],
                              command: tuple[str, ...]) -> None:
    text = spec_yaml(base, fields)
    accepted, spec = _loaded(text)
    if accepted and not _small(spec) and HEAVY & set(command):
        command = ("params", "{}", "-f", "json")
    path = _write(tmp_path / "random.yaml", text)
    args = [str(path) if part == "{}" else part for part in command]
    result = check(invoke(*args), where=f"{fields}: {command}", report=args[0] == "validate")
    if not accepted and args[0] != "import-config":
        assert result.code == 2, (fields, result.stderr[:300])

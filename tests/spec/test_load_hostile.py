"""Hostile spec files (issue #11, "Parsers"): each class gives exit 2 and one bounded message that
names the file, line and field, no traceback, and costs bounded time and memory."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from tests.conftest import VALID_SPEC
from tfcli.spec import yaml_reader as spec_yaml
from tfcli.core.errors import SpecError
from tfcli.spec.load import MAX_SPEC_BYTES, MAX_SUGGESTED, parse_spec_text
from tfcli.spec.yaml_reader import MAX_NODES

# "Billion laughs" as one flow list: ten anchors, each nine aliases of the one before (9**10
# leaves once expanded, 100 nodes as written).
ALIAS_BOMB = "[&l0 [" + ", ".join(['"lol"'] * 9) + "], " + ", ".join(
    f"&l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)) + "]"


def _one_error_line(result: object, path: Path, line: int | None, *expected: str) -> str:
    """The CLI's single stderr line, checked: exit 2, no traceback, nothing on stdout."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines[:3]
    where = f"{path}:{line}:" if line is not None else f"{path}:"
    assert lines[0].startswith(f"tfcli: error: {where}"), lines[0]
    for text in expected:
        assert text in lines[0], lines[0]
    assert len(lines[0]) < 400
    return lines[0]


# --- 1. bounded reading -------------------------------------------------------------------


def _tfcli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess: an unbounded read or a blocking open would hang a test
    run in-process; here the timeout turns a regression into a failure."""
    return subprocess.run([sys.executable, "-m", "tfcli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "100"})


def test_device_and_fifo_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    for path, kind in (("/dev/zero", "is a character device"), (str(fifo), "is a FIFO")):
        result = _tfcli("params", path)
        assert result.returncode == 2, result.stderr
        assert result.stderr == f"tfcli: error: {path}: {kind}" \
            f"{' (named pipe)' if 'FIFO' in kind else ''}, not a spec file; save the spec to a file\n"
        assert result.stdout == ""


def test_oversized_file_names_both_sizes(invoke, tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(VALID_SPEC + "# " + "x" * MAX_SPEC_BYTES + "\n")
    size = path.stat().st_size
    line = _one_error_line(invoke("params", str(path)), path, None)
    assert f"is {size:,} bytes; a spec file may be at most {MAX_SPEC_BYTES:,} bytes" in line


def test_a_spec_just_under_the_cap_is_read(tmp_path: Path) -> None:
    text = VALID_SPEC + "# " + "x" * (MAX_SPEC_BYTES - len(VALID_SPEC) - 3) + "\n"
    assert len(text) == MAX_SPEC_BYTES
    assert parse_spec_text(text).d_model == 16


def test_oversized_text_is_refused_before_parsing() -> None:
    with pytest.raises(SpecError, match="is 262,145 characters"):
        parse_spec_text("a" * (MAX_SPEC_BYTES + 1), source="s.yaml")


def test_overlong_file_name_is_one_cut_line(invoke) -> None:
    name = "a" * 300 + ".yaml"  # ENAMETOOLONG from stat: was an OSError traceback
    result = invoke("params", name)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "File name too long" in result.stderr
    assert "(305 characters)" in result.stderr and len(result.stderr) < 400


# --- 2. integers --------------------------------------------------------------------------


def test_integer_over_python_digit_limit(invoke, write_spec) -> None:
    path = write_spec(VALID_SPEC.replace("n_layers: 2", "n_layers: " + "1" * 5000))
    _one_error_line(invoke("params", str(path)), path, 7, "field 'n_layers'",
                    "an integer of 5,000 digits is out of range (at most 30)")


def test_thirty_digits_still_parse_and_count_exactly() -> None:
    spec = parse_spec_text(VALID_SPEC.replace("n_layers: 2", "n_layers: " + "9" * 30))
    assert spec.n_layers == 10**30 - 1


@pytest.mark.parametrize(("value", "expected"), [
    ("!!int abc", "'abc' is not an integer"),
    ("!!int 1:0", "'1:0' is not an integer"),
    ("!!float abc", "'abc' is not a number"),
    ("!!bool maybe", "'maybe' is not a boolean"),
    ("!!null x", "'x' is not null"),
    ("!!timestamp 2001-12-14", "tag '!!timestamp' is not allowed"),
    ("!!binary aGVsbG8=", "tag '!!binary' is not allowed"),
    ("!!set {a, b}", "tag '!!set' is not allowed"),
    ("!!python/object:os.system ls", "tag '!!python/object:os.system' is not allowed"),
    ("!custom x", "tag '!custom' is not allowed"),
    ("!!int [1, 2]", "tag !!int does not fit a list"),
    ("!!seq abc", "tag !!seq does not fit a single value"),
])
def test_explicit_tags_are_strict(invoke, write_spec, value: str, expected: str) -> None:
    path = write_spec(VALID_SPEC.replace("n_layers: 2", f"n_layers: {value}"))
    _one_error_line(invoke("params", str(path)), path, 7, "field 'n_layers'", expected)


# --- 3. nesting ---------------------------------------------------------------------------


@pytest.mark.parametrize(("nested", "line"), [
    ("[" * 1000 + "]" * 1000, 9),
    ("{a: " * 1000 + "1" + "}" * 1000, 9),
    ("[{a: " * 500 + "1" + "}]" * 500, 9),
    ("".join(f"\n{'  ' * i}- " for i in range(1, 30)) + "x", 9 + 16),  # block style
])
def test_deep_nesting_is_refused(invoke, write_spec, nested: str, line: int) -> None:
    # 1,000 levels was a RecursionError in PyYAML's composer; the line is where level 17 opens.
    path = write_spec(VALID_SPEC + f"extra: {nested}\n")
    _one_error_line(invoke("params", str(path)), path, line, "more than 16 levels deep")


def test_nesting_built_from_alias_chains_is_refused() -> None:
    # Each anchor nests the previous one 12 levels deeper: every mapping is shallow as written.
    chain = "".join(f"a{i}: &a{i} {'[' * 12}{f'*a{i - 1}' if i else 1}{']' * 12}\n"
                    for i in range(20))
    with pytest.raises(SpecError, match="more than 16 levels deep once aliases are expanded"):
        parse_spec_text(VALID_SPEC + chain)


# --- 4. aliases ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "field"), [
    (VALID_SPEC.replace("name: tiny", f"name: {ALIAS_BOMB}"), "name"),  # a string field
    (VALID_SPEC + f"notes: {ALIAS_BOMB}\n", "notes"),  # an unknown field
    (f"<<: {{description: {ALIAS_BOMB}}}\n" + VALID_SPEC, "<<.description"),  # in a merge
])
def test_alias_bomb_is_refused_in_bounded_memory(invoke, write_spec, text: str, field: str) -> None:
    path = write_spec(text)
    tracemalloc.start()
    result = invoke("params", str(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    line = _one_error_line(result, path, None, f"more than {MAX_NODES:,} YAML nodes once aliases "
                           "are expanded")
    assert f"field '{field}[" in line  # the item of that field that grew too big
    assert peak < 50 * 2**20  # the expanded value, or its repr, would be gigabytes


def test_recursive_anchor_is_refused(invoke, write_spec) -> None:
    path = write_spec(VALID_SPEC + "extra: &loop [1, *loop]\n")
    _one_error_line(invoke("params", str(path)), path, 9, "field 'extra[1]'", "recursive anchor")


def test_small_aliases_and_merges_still_work() -> None:
    text = "<<: {d_ff: 64, init_std: 0.5}\n" + VALID_SPEC.replace("d_ff: 32\n", "")
    text = text.replace("d_model: 16", "d_model: &width 16") + "d_head: *width\n"
    spec = parse_spec_text(text)
    assert (spec.d_ff, spec.init_std, spec.d_head) == (64, 0.5, 16)


def test_composition_stops_at_the_node_cap(monkeypatch) -> None:
    composed = 0
    original = spec_yaml.SpecLoader.compose_node

    def counting(self, parent, index):  # type: ignore[no-untyped-def]
        nonlocal composed
        composed += 1
        return original(self, parent, index)

    monkeypatch.setattr(spec_yaml.SpecLoader, "compose_node", counting)
    with pytest.raises(SpecError, match=f"more than {MAX_NODES:,} YAML nodes"):
        parse_spec_text(VALID_SPEC + "extra: [" + "0, " * 60_000 + "0]\n")
    assert composed <= MAX_NODES + 1  # the other 55,000 items are never built


# --- 5. many unknown keys -----------------------------------------------------------------


def test_thousands_of_unknown_keys_give_ten_lines_and_a_count(invoke, write_spec) -> None:
    path = write_spec(VALID_SPEC + "".join(f"n_layerz{i}: 1\n" for i in range(2000)))
    result = invoke("params", str(path))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 11
    assert lines[0] == f"tfcli: error: {path}:9: field 'n_layerz0': unknown field; did you mean " \
        "'n_layers'?"
    assert lines[-1] == f"{path}: … and 1,990 more problems"


def test_did_you_mean_work_is_bounded(monkeypatch) -> None:
    import difflib

    calls = 0
    original = difflib.get_close_matches

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counting)
    with pytest.raises(SpecError):
        parse_spec_text(VALID_SPEC + "".join(f"key{i}: 1\n" for i in range(2000)))
    assert calls <= MAX_SUGGESTED + 10


def test_unknown_key_with_control_bytes_and_length_is_escaped_and_cut(invoke, write_spec) -> None:
    key = "\\e]0;pwned\\a" + "k" * 5000  # YAML escapes: ESC ... BEL, then 5,000 characters
    path = write_spec(VALID_SPEC + f'? "{key}"\n: 1\n')  # `?`: a simple key stops at 1,024
    line = _one_error_line(invoke("params", str(path)), path, 9, "unknown field",
                           "\\x1b]0;pwned\\x07", "(5,010 characters)")
    assert "\x1b" not in line and "\x07" not in line


def test_hostile_values_are_escaped_and_cut(invoke, write_spec) -> None:
    path = write_spec(VALID_SPEC.replace("family: decoder", 'family: "\\e[2J' + "x" * 10_000 + '"'))
    line = _one_error_line(invoke("params", str(path)), path, 2, "field 'family': must be one of",
                           "'\\x1b[2Jxxx", "(10,004 characters)")
    assert "\x1b" not in line


# --- 6. YAML 1.1 surprises ----------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    ("020", "020: a leading zero is ambiguous (YAML 1.1 reads octal, YAML 1.2 decimal); write 20,"
     " or 0o20 for octal"),
    ("-007", "write -7"),
    ("09", "write 9"),
    ("1:0", "must be a valid integer (got '1:0'); base-60 numbers"),
    ("1_000", "(got '1_000'); write 1000"),
    ("１２", "must be a valid integer (got '１２')"),  # full-width digits are not digits
    ("0b101", "must be a valid integer (got '0b101')"),
    ("12.0", "must be a valid integer (got 12.0)"),
])
def test_ambiguous_integers(invoke, write_spec, value: str, expected: str) -> None:
    path = write_spec(VALID_SPEC.replace("n_layers: 2", f"n_layers: {value}"))
    _one_error_line(invoke("params", str(path)), path, 7, "field 'n_layers'", expected)


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "Y", "NO"])
def test_yaml11_booleans_are_strings_with_a_hint(invoke, write_spec, value: str) -> None:
    path = write_spec(VALID_SPEC + f"bias: {value}\n")
    _one_error_line(invoke("params", str(path)), path, 9, "field 'bias'",
                    f"must be a valid boolean (got '{value}'); write true or false")


@pytest.mark.parametrize(("text", "field", "value"), [
    ("n_layers: 0x2", "n_layers", 2),
    ("n_layers: 0o2", "n_layers", 2),
    ("n_layers: +2", "n_layers", 2),
    ("norm_eps: 1e-6", "norm_eps", 1e-6),
    ("norm_eps: .5e-5", "norm_eps", 5e-6),
    ("bias: FALSE", "bias", False),
    ("bias: True", "bias", True),
    ("n_kv_heads: ~", "n_kv_heads", 4),
    ("n_kv_heads: null", "n_kv_heads", 4),
    ("name: yes", "name", "yes"),
    ("name: on", "name", "on"),
    ("name: 2001-12-14", "name", "2001-12-14"),
    ("name: 1:30", "name", "1:30"),
    ("name: 1_000x", "name", "1_000x"),
    ("name: =", "name", "="),
    ("description: '020'", "description", "020"),
])
def test_yaml12_core_values(text: str, field: str, value: object) -> None:
    key = text.split(":")[0]
    base = "".join(line + "\n" for line in VALID_SPEC.splitlines() if not line.startswith(key + ":"))
    got = getattr(parse_spec_text(base + text + "\n"), field)
    assert type(got) is type(value)
    assert got == (pytest.approx(value) if isinstance(value, float) else value)


@pytest.mark.parametrize("value", [".inf", "-.Inf", ".NaN", "1e400", "-1e999"])
def test_non_finite_floats_are_refused_by_field(invoke, write_spec, value: str) -> None:
    path = write_spec(VALID_SPEC + f"rope_theta: {value}\n")
    _one_error_line(invoke("params", str(path)), path, 9, "field 'rope_theta'", "finite number")


def test_every_bundled_spec_round_trips_through_export() -> None:
    from tfcli.checkpoints.export import spec_to_yaml
    from tfcli.spec.load import bundled_spec_names
    from tfcli.sources import load_spec

    for name in bundled_spec_names():
        spec = load_spec(name)
        assert parse_spec_text(spec_to_yaml(spec)) == spec, name


def test_echoed_text_fields_are_bounded(tmp_path) -> None:
    """Every command echoes name / description / source: a 100,000-character name printed 100 KB
    per table. Refused with the field and its limit."""
    from tfcli.core.errors import SpecError
    from tfcli.sources import load_spec

    base = "family: decoder\nvocab_size: 300\nmax_seq_len: 32\nd_model: 16\nn_heads: 4\nn_layers: 2\nd_ff: 32\n"
    for field, limit in (("name", 200), ("description", 2000), ("source", 2000)):
        path = tmp_path / f"{field}.yaml"
        extra = "" if field == "name" else "name: x\n"
        path.write_text(f"{extra}{field}: {'a' * (limit + 1)}\n{base}", encoding="utf-8")
        with pytest.raises(SpecError, match=f"field '{field}': must have at most {limit} characters"):
            load_spec(str(path))

"""Spec loading: every kind of bad input gives exit 2, one clear message naming the field and
line, and no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import VALID_SPEC
from tfcli.core.errors import SpecError
from tfcli.spec.load import parse_spec_text

# (name, YAML text, text the message must contain, line it must name or None)
BAD_SPECS = [
    ("typo", VALID_SPEC.replace("n_heads:", "n_head:"), "did you mean 'n_heads'", 6),
    ("unknown", VALID_SPEC + "flavour: vanilla\n", "'flavour': unknown field", 9),
    ("missing", VALID_SPEC.replace("d_ff: 32\n", ""), "'d_ff': is required", None),
    ("wrong type", VALID_SPEC.replace("n_layers: 2", "n_layers: two"), "'n_layers'", 7),
    ("float size", VALID_SPEC.replace("n_layers: 2", "n_layers: 2.5"), "'n_layers'", 7),
    ("bool size", VALID_SPEC.replace("n_layers: 2", "n_layers: true"), "'n_layers'", 7),
    ("negative", VALID_SPEC.replace("d_ff: 32", "d_ff: -32"), "'d_ff': must be greater than 0", 8),
    ("zero", VALID_SPEC.replace("vocab_size: 64", "vocab_size: 0"), "'vocab_size'", 3),
    ("indivisible", VALID_SPEC.replace("d_model: 16", "d_model: 18"), "not divisible by n_heads", 6),
    ("kv heads", VALID_SPEC + "n_kv_heads: 3\n", "'n_kv_heads'", 9),
    ("experts", VALID_SPEC + "n_experts: 2\nexperts_per_token: 3\n", "'experts_per_token'", 10),
    ("experts zero k", VALID_SPEC + "n_experts: 4\n", "'experts_per_token'", None),
    ("odd rope", VALID_SPEC + "positions: rope\nd_head: 5\n", "'d_head': RoPE needs an even", 10),
    ("bad enum", VALID_SPEC + "activation: gelu2\n", "'activation': must be one of", 9),
    ("enum typo", VALID_SPEC + "activation: swiglue\n", "(got 'swiglue'); did you mean 'swiglu'?",
     9),
    ("norm typo", VALID_SPEC + "norm: rmsnrom\n", "did you mean 'rmsnorm'?", 9),
    ("bad family", VALID_SPEC.replace("family: decoder", "family: decoder-only"), "'family'", 2),
    ("enc layers", VALID_SPEC + "n_encoder_layers: 2\n", "'n_encoder_layers'", 9),
    ("pooler decoder", VALID_SPEC + "pooler: true\n", "'pooler'", 9),
    ("window encoder-decoder", VALID_SPEC.replace("family: decoder", "family: encoder-decoder")
     + "sliding_window: 4\n", "'sliding_window': does not apply to family 'encoder-decoder'",
     9),
    ("window zero", VALID_SPEC + "sliding_window: 0\n", "'sliding_window': must be greater", 9),
    ("final norm none", VALID_SPEC + "norm: none\nfinal_norm: true\n", "'final_norm'", 10),
    ("negative eps", VALID_SPEC + "norm_eps: -1e-5\n", "'norm_eps'", 9),
    ("string name", VALID_SPEC.replace("name: tiny", "name: [a, b]"), "'name'", 1),
    ("empty", "", "is empty", None),
    ("comments only", "# nothing here\n", "is empty", None),
    ("list", "- a\n- b\n", "must be a mapping", 1),
    ("scalar", "hello\n", "must be a mapping", 1),
    ("syntax", "name: [unclosed\nfamily: decoder\n", "YAML syntax error", None),
    ("tab indent", "name: x\n\tfamily: decoder\n", "YAML syntax error", None),
    ("non-string key", VALID_SPEC + "1: x\n", "field names must be strings", 9),
    ("inf init_std", VALID_SPEC + "init_std: .inf\n", "'init_std': must be a finite number", 9),
    ("-inf init_std", VALID_SPEC + "init_std: -.inf\n", "'init_std': must be a finite number", 9),
    ("inf scale", VALID_SPEC + "attention_scale: .inf\n", "'attention_scale': must be a finite", 9),
    ("overflow theta", VALID_SPEC + "rope_theta: 1e400\n", "'rope_theta': must be a finite", 9),
    ("nan eps", VALID_SPEC + "norm_eps: .nan\n", "'norm_eps': must be a finite number", 9),
    ("duplicate", VALID_SPEC.replace("n_layers: 2\n", "n_layers: 2\nn_layers: 5\n"),
     "field 'n_layers': duplicate key (first on line 7)", 8),
    ("duplicate quoted", VALID_SPEC + '"d_ff": 64\n', "'d_ff': duplicate key (first on line 8)", 9),
    ("duplicate nested", VALID_SPEC.replace("name: tiny", "name:\n  a: 1\n  a: 2"),
     "field 'name.a': duplicate key (first on line 2)", 3),
    ("duplicate in list", VALID_SPEC + "notes:\n  - {k: 1, k: 2}\n",
     "field 'notes[0].k': duplicate key (first on line 10)", 10),
]


@pytest.mark.parametrize(("case", "text", "expected", "line"), BAD_SPECS, ids=[b[0] for b in BAD_SPECS])
def test_bad_spec_through_cli(invoke, write_spec, case: str, text: str, expected: str,
                              line: int | None) -> None:
    path = write_spec(text)
    result = invoke("params", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert expected in result.stderr
    assert str(path) in result.stderr
    if line is not None:
        assert f"{path}:{line}:" in result.stderr
    assert result.stdout == ""


def test_missing_file_directory_and_binary(invoke, tmp_path: Path) -> None:
    binary = tmp_path / "garbage.yaml"
    binary.write_bytes(bytes(range(256)))
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    for arg, expected in ((str(tmp_path / "nope.yaml"), "no such file"),
                          (str(tmp_path), "is a directory"),
                          (str(binary), "binary file"),
                          (str(latin), "not UTF-8"),
                          ("gtp2", "did you mean 'gpt2'")):
        result = invoke("params", arg)
        assert result.exit_code == 2
        assert expected in result.stderr
        assert "Traceback" not in result.output


def test_duplicate_key_message_names_both_lines(invoke, write_spec) -> None:
    path = write_spec(VALID_SPEC.replace("n_layers: 2\n", "n_layers: 2\nn_layers: 5\n"))
    assert invoke("validate", str(path)).exit_code == 2
    result = invoke("params", str(path))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"tfcli: error: {path}:8: field 'n_layers': duplicate key (first on line 7)")


def test_every_duplicate_is_reported_in_file_order() -> None:
    text = VALID_SPEC + "d_model: 32\nd_ff: 64\n"
    with pytest.raises(SpecError) as info:
        parse_spec_text(text, source="dup.yaml")
    assert [(p.field, p.line) for p in info.value.problems] == [("d_model", 9), ("d_ff", 10)]


def test_merge_keys_may_be_overridden() -> None:
    # `<<` merges are YAML's way to share defaults; overriding a merged key is not a duplicate.
    spec = parse_spec_text("<<: {d_ff: 64, init_std: 0.5}\n" + VALID_SPEC)
    assert (spec.d_ff, spec.init_std) == (32, 0.5)


def test_non_finite_spec_is_refused_before_a_run(invoke, write_spec) -> None:
    path = write_spec(VALID_SPEC + "init_std: .inf\n")
    result = invoke("run", str(path), "--tokens", "1,2", "-f", "json")
    assert result.exit_code == 2
    assert f"{path}:9: field 'init_std': must be a finite number" in result.stderr
    assert result.stdout == ""


def test_float_with_exponent_and_no_dot_is_a_float() -> None:
    spec = parse_spec_text(VALID_SPEC + "norm_eps: 1e-6\n")
    assert spec.norm_eps == 1e-6


def test_derived_fields() -> None:
    spec = parse_spec_text(VALID_SPEC)
    assert (spec.n_kv_heads, spec.d_head, spec.final_norm) == (4, 4, True)
    assert (spec.attention_bias, spec.ffn_bias) == (True, True)
    post = parse_spec_text(VALID_SPEC + "norm_placement: post\nbias: false\nffn_bias: true\n")
    assert post.final_norm is False
    assert (post.attention_bias, post.ffn_bias) == (False, True)


def test_debug_shows_traceback(runner, write_spec, monkeypatch) -> None:
    from tfcli.cli.app import app

    monkeypatch.setenv("TFCLI_DEBUG", "1")
    result = runner.invoke(app, ["params", str(write_spec("- 1\n"))])
    assert result.exit_code == 2
    assert "Traceback" in result.stderr


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
field_names = st.sampled_from(["name", "family", "d_model", "n_heads", "n_layers", "d_ff",
                               "vocab_size", "max_seq_len", "norm", "positions", "n_kv_heads",
                               "d_head", "activation", "n_experts", "experts_per_token"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    yaml_values,
    st.dictionaries(field_names | st.text(max_size=10), yaml_values, max_size=12),
))
def test_arbitrary_yaml_documents_never_raise_anything_but_spec_error(doc: object) -> None:
    text = yaml.safe_dump(doc)
    try:
        parse_spec_text(text, source="fuzz.yaml")
    except SpecError as exc:
        assert exc.message.startswith("fuzz.yaml")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises_anything_but_spec_error(text: str) -> None:
    try:
        parse_spec_text(text, source="fuzz.yaml")
    except SpecError:
        pass

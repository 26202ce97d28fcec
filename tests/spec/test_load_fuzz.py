"""Property tests (issue #11, "Parsers"): random YAML documents, junk text and bytes, and mutations
of the bundled specs never raise anything but a SpecError, whose message is bounded, few lines
long, printable and headed by the file name."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfcli.core.errors import MAX_SHOWN_PROBLEMS, SpecError
from tfcli.spec.model import FIELD_NAMES, Spec
from tfcli.spec.load import bundled_spec_names, bundled_spec_path, parse_spec_text
from tfcli.sources import load_spec

SOURCE = "fuzz.yaml"
MAX_MESSAGE = 4096
BUNDLED = [bundled_spec_path(name).read_text() for name in bundled_spec_names()]

# Values that broke the loader before (or would have): YAML 1.1 forms, tags, anchors, nesting,
# huge and non-finite numbers, control characters.
HOSTILE = [
    "020", "-007", "0x1F", "0o17", "1:0", "1_000", "yes", "off", "~", "null", "", ".inf", "-.nan",
    "1e400", "1" * 5000, "12" * 16, "１２", "!!int abc", "!!float x", "!!bool maybe", "!!null 1",
    "!!timestamp 2001-12-14", "!!binary aGk=", "!!set {a}", "!python/object:os.system x", "!x y",
    "&a [*a]", "*undefined", "&a 1", "[" * 40, "{a: " * 30, "]", "}", "<<", "<<: *a", "? [a]",
    '"\\e[2J\\a"', "'[/]'", "[link=x]y[/link]", "- - - -", "|\n  x", ">-", "%YAML 1.1", "---",
    "...", "#", "\t", "\\", '"\\x00"', "2001-12-14", "=", "k" * 300, "a: b: c", "{a: 1, a: 2}",
    "[" * 1200 + "1" + "]" * 1200, "{a: " * 600 + "1" + "}" * 600,
    "[&a [1, 1, 1, 1, 1, 1, 1, 1], &b [*a, *a, *a, *a, *a, *a, *a, *a], &c [*b, *b, *b, *b, *b, *b,"
    " *b, *b], &d [*c, *c, *c, *c, *c, *c, *c, *c], &e [*d, *d, *d, *d, *d, *d, *d, *d]]",
]

scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats() | st.text(max_size=20) | st.sampled_from(HOSTILE)
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=10), inner, max_size=6),
    max_leaves=15,
)
yaml_alphabet = st.sampled_from(list("abn_l0123456789 :-[]{},&*!|>'\"#?%@`\n\t.~<=+\\") + HOSTILE)


def _check(text: str) -> None:
    """Either a Spec, or a SpecError with a bounded, printable, few-line message."""
    try:
        spec = parse_spec_text(text, source=SOURCE)
    except SpecError as exc:
        message = exc.message
        assert message.startswith(SOURCE), message[:200]
        assert len(message) < MAX_MESSAGE, message[:200]
        lines = message.split("\n")
        assert len(lines) <= MAX_SHOWN_PROBLEMS + 1
        assert all(line.isprintable() for line in lines), message[:200]
    else:
        assert isinstance(spec, Spec)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    documents,
    st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=10), documents, max_size=10),
), st.booleans())
def test_random_yaml_documents(doc: object, flow: bool) -> None:
    _check(yaml.dump(doc, default_flow_style=flow, allow_unicode=True))


@settings(max_examples=700, deadline=None)
@given(st.lists(yaml_alphabet, max_size=80).map("".join))
def test_random_yaml_like_text(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_random_unicode_text(text: str) -> None:
    _check(text)


@st.composite
def mutated_specs(draw: st.DrawFn) -> str:
    """A bundled spec with 1-4 edits: a value replaced by a hostile one, junk inserted, a slice
    deleted, a line duplicated or indented."""
    lines = draw(st.sampled_from(BUNDLED)).splitlines()
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.sampled_from(["value", "insert", "delete", "duplicate", "indent"]))
        line = lines[index]
        if edit == "value" and ":" in line:
            lines[index] = f"{line.split(':')[0]}: {draw(st.sampled_from(HOSTILE))}"
        elif edit == "insert":
            at = draw(st.integers(0, len(line)))
            junk = draw(st.lists(yaml_alphabet, min_size=1, max_size=6).map("".join))
            lines[index] = line[:at] + junk + line[at:]
        elif edit == "delete":
            at = draw(st.integers(0, len(line)))
            lines[index] = line[:at] + line[at + draw(st.integers(1, 8)):]
        elif edit == "duplicate":
            lines.insert(index, line)
        else:
            lines[index] = "  " + line
    return "\n".join(lines) + "\n"


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_specs())
def test_mutated_bundled_specs(text: str) -> None:
    _check(text)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | st.sampled_from(BUNDLED).map(lambda t: t.encode()[:150] + b"\xff"))
def test_random_bytes_as_a_file(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(data)
    try:
        load_spec(str(path))
    except SpecError as exc:
        assert exc.message.startswith(str(path))
        assert len(exc.message) < MAX_MESSAGE
        assert all(line.isprintable() for line in exc.message.split("\n"))

"""Echoing user values in messages: shown() and clip() are bounded and escape control characters,
and a SpecError lists at most MAX_SHOWN_PROBLEMS problems."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfcli.core.errors import MAX_SHOWN_PROBLEMS, Problem, SpecError, clip, shown

CONTROL = "\x1b\x07\x08\r\n\x00\x7f\x85\u202e\u2028"


def _alias_bomb(levels: int = 9) -> list:
    """A list that shares itself: 9**levels leaves, built in O(levels) (what YAML aliases make)."""
    value: list = ["lol"] * 9
    for _ in range(levels):
        value = [value] * 9
    return value


def test_alias_bomb_is_summarised_without_walking_it() -> None:
    tracemalloc.start()
    text = shown(_alias_bomb())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert text == "[[…], […], […], […]…] (a list of 9 items)"
    assert peak < 1_000_000  # its full repr would be gigabytes


def test_huge_integer_is_described_not_converted() -> None:
    # str() of a 5,000-digit int raises ValueError (Python's 4,300-digit limit).
    assert shown(10**4999) == "an integer of about 5,000 digits"
    assert shown(-(10**70)).startswith("an integer of about 7")
    assert shown(12345) == "12345"


def test_long_string_is_cut_with_its_length() -> None:
    assert shown("x" * 100_000) == f"'{'x' * 60}…' (100,000 characters)"
    assert shown("swiglue") == "'swiglue'"
    assert shown("x" * 60) == f"'{'x' * 60}'"


def test_mapping_with_many_keys_names_its_size() -> None:
    text = shown({f"k{i}": i for i in range(400_000)})
    assert text.endswith("(a mapping of 400,000 keys)")
    assert len(text) < 120


@pytest.mark.parametrize("char", list(CONTROL))
def test_control_characters_are_escaped(char: str) -> None:
    for text in (shown(f"a{char}b"), shown([f"a{char}b"]), clip(f"a{char}b"), clip(char * 500)):
        assert char not in text
        assert text.isprintable()


def test_clip_keeps_plain_names_and_cuts_long_ones() -> None:
    assert clip("n_layers") == "n_layers"
    assert clip("/tmp/a b/spec.yaml") == "/tmp/a b/spec.yaml"
    long = clip("k" * 10_000, 120)
    assert long == f"{'k' * 120}… (10,000 characters)"


@settings(max_examples=300, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=30) | st.dictionaries(st.text(), inner, max_size=30)
    | st.tuples(inner, inner),
    max_leaves=60,
))
def test_shown_is_always_short_and_printable(value: object) -> None:
    text = shown(value)
    assert len(text) <= 200
    assert text.isprintable()


def test_spec_error_lists_ten_problems_then_a_count() -> None:
    problems = [Problem(f"k{i}", "unknown field", i + 1) for i in range(50_000)]
    error = SpecError("big.yaml", problems)
    lines = error.message.splitlines()
    assert len(lines) == MAX_SHOWN_PROBLEMS + 1
    assert lines[0] == "big.yaml:1: field 'k0': unknown field"
    assert lines[-1] == "big.yaml: … and 49,990 more problems"
    assert error.problems is problems  # callers still see all of them


def test_spec_error_counts_problems_the_caller_did_not_build() -> None:
    error = SpecError("s.yaml", [Problem("a", "bad", 1)], omitted=1)
    assert error.message.splitlines() == ["s.yaml:1: field 'a': bad", "s.yaml: … and 1 more problem"]


def test_problem_render_escapes_field_and_source() -> None:
    text = Problem("\x1b]0;pwn\x07" * 100, "unknown field", 3).render("/tmp/\x1b[2J.yaml")
    assert "\x1b" not in text and "\x07" not in text
    assert len(text) < 400

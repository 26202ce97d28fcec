"""Issue 18's conventions: one name per option everywhere (old names hidden, with a deprecation
note), a positional prompt, typed dtype choices, `tfcli specs NAME`, a depth sweep with no SPEC,
and output people copy: no blank first line, no trailing spaces, cut lists that say so."""

from __future__ import annotations

import json
import re

import pytest

from tests.cli.guarded import run_in_memory
from tfcli.render.output import _count
from tfcli.spec.load import bundled_spec_path

TINY = ["--max-new-tokens", "3"]


def _ok(*args: str) -> tuple[str, str]:
    code, out, err = run_in_memory(*args)
    assert code == 0, (args, code, err)
    return out, err


def _bad(*args: str) -> str:
    code, out, err = run_in_memory(*args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (args, code, err)
    return err


def test_generate_takes_the_prompt_as_argument_or_text_and_prompt_is_a_hidden_alias() -> None:
    positional, err = _ok("generate", "lesson-tiny", "Hi", *TINY, "-f", "json")
    assert err == ""
    option, _ = _ok("generate", "lesson-tiny", "--text", "Hi", *TINY, "-f", "json")
    old, note = _ok("generate", "lesson-tiny", "--prompt", "Hi", *TINY, "-f", "json")
    ids = [json.loads(out)["tokens"] for out in (positional, option, old)]
    assert ids[0] == ids[1] == ids[2]
    assert note == "tfcli: note: --prompt is deprecated and goes in the next release; use --text\n"
    assert "both" in _bad("generate", "lesson-tiny", "Hi", "--text", "Ho", *TINY)
    assert "--text alone" in _bad("generate", "lesson-tiny", "--prompt", "a", "--text", "b")


def test_run_takes_texts_as_arguments_too() -> None:
    args = ["run", "lesson-tiny", "-f", "json"]
    positional = json.loads(_ok(*args[:2], "ab", "cd", *args[2:])[0])
    option = json.loads(_ok(*args[:2], "--text", "ab", "--text", "cd", *args[2:])[0])
    assert positional["tokens"] == option["tokens"] and len(positional["tokens"]) == 2


def test_params_seq_len_layers_and_the_old_context() -> None:
    new = json.loads(_ok("params", "gpt2", "--seq-len", "64", "-f", "json")[0])
    old, note = _ok("params", "gpt2", "--context", "64", "-f", "json")
    assert json.loads(old) == new and "--context is deprecated" in note and "--seq-len" in note
    assert "64 tokens" in _ok("params", "gpt2", "--seq-len", "64")[0]
    cut = json.loads(_ok("params", "gpt2", "--layers", "2", "-f", "json")[0])
    assert cut["total"] < new["total"] and "did you mean --seq-len" in _bad("params", "gpt2", "--seq-le", "3")


@pytest.mark.parametrize(("args", "allowed"), [
    (["run", "lesson-tiny", "--dtype"], "'float32', 'float64'"),
    (["generate", "lesson-tiny", "--dtype"], "'float32', 'float64'"),
    (["trace", "lesson-tiny", "--dtype"], "'float32', 'bfloat16', 'float16'"),
    (["depth-sweep", "--dtype"], "'float64', 'float32'"),
    (["params", "gpt2", "--kv-dtype"], "'float32', 'float16', 'bfloat16', 'int8'"),
    (["params", "gpt2", "--format"], "'table', 'json', 'csv'"),
    (["depth-sweep", "--sublayer"], "'block', 'attention', 'ffn', 'linear'"),
])
def test_a_bad_choice_is_one_line_naming_the_values_allowed(args: list[str], allowed: str) -> None:
    line = _bad(*args, "yaml")
    assert f"{args[-1]}: 'yaml' is not one of {allowed}" in line and "Value error" not in line


def test_trace_dtype_is_typed_and_still_counts_bytes() -> None:
    f32 = json.loads(_ok("trace", "lesson-tiny", "--seq-len", "8", "-f", "json")[0])
    f16 = json.loads(_ok("trace", "lesson-tiny", "--seq-len", "8", "--dtype", "float16", "-f", "json")[0])
    assert f16["dtype"] == "float16" and f32["dtype"] == "float32"


def test_specs_name_prints_the_bundled_yaml_as_shipped() -> None:
    out, err = _ok("specs", "lesson-tiny")
    assert out == bundled_spec_path("lesson-tiny").read_text(encoding="utf-8") and err == ""
    assert "did you mean 'gpt2'" in _bad("specs", "gtp2")
    assert "\\x1b" in _bad("specs", "\x1b[31m")  # a hostile name is escaped


def test_depth_sweep_without_a_spec_stacks_lesson_tiny() -> None:
    data = json.loads(_ok("depth-sweep", "--depths", "1,2", "-f", "json")[0])
    assert data["spec"] == "lesson-tiny" and data["sublayer"] == "block"
    linear = json.loads(_ok("depth-sweep", "--sublayer", "linear", "--depths", "1", "-f", "json")[0])
    assert linear["spec"] is None


def test_depth_sweep_chart_has_a_glyph_per_series_and_its_legend_below(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    out, _ = _ok("depth-sweep", "--depths", "1,64")  # pre, post and plain apart by 64
    chart = out[out.index("┌"):]
    legend = chart.rstrip("\n").splitlines()[-1]
    assert legend.split() == ["o", "pre", "x", "post", "+", "plain"]
    plot_area = "\n".join(line for line in chart.splitlines() if "│" in line)
    assert "pre" not in plot_area and all(glyph in plot_area for glyph in "ox+")
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "…" not in out  # no cut numbers at 80 columns


def test_progress_count_never_reads_none() -> None:
    assert _count(0, None) == "0" and _count(3, 7) == "3/7"


def test_plot_refuses_another_suffix(tmp_path) -> None:
    target = tmp_path / "sweep.jpg"
    assert ".png" in _bad("depth-sweep", "--sublayer", "linear", "--depths", "1", "--plot", str(target))
    assert not target.exists()


def test_run_shows_each_top_id_once_and_the_norms_in_one_row() -> None:
    text, _ = _ok("run", "gpt2", "Hello", "--layers", "1")
    tokens, _ = _ok("run", "gpt2", "--tokens", "1,2,3", "--layers", "1")
    for out in (text, tokens):
        cells = re.findall(r"│ (\d+)(?: '[^']*')? p=", out)
        assert len(cells) == 5, out
        assert f"({cells[0]})" not in out and f"'{cells[0]}'" not in out and f"<{cells[0]}>" not in out
        assert "27.71 at every position" in out and "norm per position" not in out


@pytest.mark.parametrize("args", [
    ["params", "gpt2"], ["specs"], ["validate", "gpt2", "lesson-tiny"],
    ["trace", "lesson-tiny", "--seq-len", "4", "--depth", "1"],
    ["run", "lesson-tiny", "--tokens", "1,2"], ["generate", "lesson-tiny", "--tokens", "1", *TINY],
    ["depth-sweep", "--depths", "1,2"],
])
def test_tables_start_with_text_and_no_line_ends_in_a_space(args: list[str]) -> None:
    out, _ = _ok(*args)
    assert out[:1].strip(), (args, out[:40])
    assert not re.search(r"[ \t]$", out, re.M), args


def test_the_new_token_list_says_how_many_more() -> None:
    out, _ = _ok("generate", "lesson-tiny", "--tokens", "1", "--max-new-tokens", "30", "--ignore-eos")
    assert "30: [" in out and "… and 6 more (--format json lists all)" in out


def test_the_ffn_share_note_only_where_it_explains_the_figure() -> None:
    gpt2, _ = _ok("params", "gpt2")
    mixtral, _ = _ok("params", "mixtral-8x7b")
    assert "8·d² of 12·d²" in gpt2 and "lesson" not in gpt2
    assert "8·d² of 12·d²" not in mixtral and "97.1% of attention + FFN" in mixtral


def test_a_mistyped_old_name_is_pointed_at_the_new_one() -> None:
    assert "did you mean --seq-len?" in _bad("params", "gpt2", "--contxt", "3")
    assert "did you mean --text or --format?" in _bad("generate", "lesson-tiny", "--promt", "x")


def test_lesson_tiny_is_explained_where_a_newcomer_meets_it() -> None:
    specs = json.loads(_ok("specs", "-f", "json")[0])["specs"]
    tiny = next(s for s in specs if s["name"] == "lesson-tiny")
    assert "milliseconds" in tiny["description"] and "lesson's tiny" not in tiny["description"]
    assert "tfcli specs NAME" in _ok("specs")[0]  # the table says where descriptions are
    assert "lesson-tiny" in _ok("depth-sweep", "--help")[0]  # the default SPEC, described


@pytest.mark.parametrize(("seconds", "shown"), [(0.4, True), (0.0, False)])
def test_slow_work_shows_a_spinner_on_a_terminal_only_after_a_second(seconds: float, shown: bool,
                                                                      monkeypatch) -> None:
    import io
    import time

    from rich.console import Console

    from tfcli.render import output

    screen = io.StringIO()
    monkeypatch.setattr(output, "stderr_console",
                        lambda: Console(file=screen, force_terminal=True, width=80))
    with output.slow_status("loading the weights", after=0.1):
        time.sleep(seconds)
    assert ("loading the weights" in screen.getvalue()) is shown

"""`tfcli generate` in one shape (issue #12 item 4): one request object from the CLI to the
engine, a mode enum built from the flags in one place, live streaming owned by the renderer, and
verdicts carried by the result so that the renderer only draws."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import tfcli.analysis.generate.timed as generation
import tfcli.render.generate as render_generate_module
from tfcli.analysis.generate.timed import CacheCheck, GenerateResult, Timed, generate_text
from tfcli.analysis.generate.mode import GenerationMode
from tfcli.analysis.model_source import load_model
from tfcli.engine.generate import GenerationRequest
from tfcli.engine.sampling import SamplingConfig
from tfcli.core.errors import BadInputError
from tfcli.render.generate import render_generate, stream_generation

CLI = Path(generation.__file__).parents[2] / "cli" / "run.py"
FLAGS = {"no_cache": "--no-cache", "check_cache": "--check-cache", "compare": "--compare"}


# --- the mode ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("flags", "mode", "cached", "uncached"), [
    ({}, GenerationMode.cache, True, False),
    ({"no_cache": True}, GenerationMode.no_cache, False, True),
    ({"check_cache": True}, GenerationMode.check, True, True),
    ({"compare": True}, GenerationMode.compare, True, True),
])
def test_each_flag_is_one_mode(flags: dict[str, bool], mode: GenerationMode, cached: bool,
                               uncached: bool) -> None:
    given = {name: flags.get(name, False) for name in FLAGS}
    assert GenerationMode.from_flags(**given) is mode
    assert (mode.runs_cached, mode.runs_uncached, mode.runs_both) == (cached, uncached,
                                                                     cached and uncached)


@pytest.mark.parametrize("pair", [("no_cache", "check_cache"), ("no_cache", "compare"),
                                  ("check_cache", "compare")])
def test_two_flags_are_refused_in_one_place(pair: tuple[str, str], invoke) -> None:
    with pytest.raises(BadInputError, match="choose at most one of"):
        GenerationMode.from_flags(**{name: name in pair for name in FLAGS})
    result = invoke("generate", "lesson-tiny", "--tokens", "1", *(FLAGS[name] for name in pair))
    assert result.exit_code == 2
    assert result.stderr.strip() == ("tfcli: error: choose at most one of --no-cache, "
                                     "--check-cache, --compare")


def test_modes_keep_their_command_line_spelling() -> None:
    assert [str(m) for m in GenerationMode] == ["cache", "no-cache", "check", "compare"]


# --- one request from the CLI to the engine ----------------------------------------------------


def spy_on_engine(monkeypatch: pytest.MonkeyPatch) -> list[tuple[GenerationRequest, bool]]:
    """Record every request the engine's generate() receives, then run it."""
    seen: list[tuple[GenerationRequest, bool]] = []
    real = generation.generate

    def spy(spec, weights, request, *, use_cache=True):  # noqa: ANN001, ANN202
        seen.append((request, use_cache))
        return real(spec, weights, request, use_cache=use_cache)

    monkeypatch.setattr(generation, "generate", spy)
    return seen


def test_the_engine_receives_the_callers_request_object(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = spy_on_engine(monkeypatch)
    request = GenerationRequest(prompts=([1, 2, 3],), max_new_tokens=4,
                                sampling=SamplingConfig(temperature=0.7, top_k=9, seed=5),
                                stop_tokens=(11,))
    generate_text(load_model("lesson-tiny"), request, None, mode=GenerationMode.check)
    assert [(r is request, cached) for r, cached in seen] == [(True, True), (True, False)]


def test_the_cli_builds_the_request_from_its_options(monkeypatch: pytest.MonkeyPatch,
                                                     invoke) -> None:
    seen = spy_on_engine(monkeypatch)
    result = invoke("generate", "lesson-tiny", "--tokens", "4,5,6", "--max-new-tokens", "3",
                    "--temperature", "0.5", "--top-k", "7", "--top-p", "0.9", "--seed", "3",
                    "--stop-token", "2", "--compare", "-f", "json")
    assert result.exit_code == 0, result.output
    (first, cached), (second, uncached) = seen
    assert first is second and cached and not uncached
    assert [list(p) for p in first.prompts] == [[4, 5, 6]]
    assert first.max_new_tokens == 3 and first.stop_tokens == (2,)
    assert first.sampling == SamplingConfig(temperature=0.5, top_k=7, top_p=0.9, seed=3)
    assert json.loads(result.stdout)["prompt_tokens"] == [4, 5, 6]


def test_generate_text_runs_one_prompt() -> None:
    model = load_model("lesson-tiny")
    two = GenerationRequest(prompts=([1, 2], [3, 4]), max_new_tokens=2)
    with pytest.raises(BadInputError, match="one prompt"):
        generate_text(model, two, None)


# --- streaming belongs to the renderer ---------------------------------------------------------


def test_the_generate_command_has_no_rich_or_live_plumbing() -> None:
    """The command and any helper of it (`_generate_live` was one); module-level imports too."""
    module = ast.parse(CLI.read_text())
    parts = [n for n in module.body if isinstance(n, ast.FunctionDef) and "generate" in n.name]
    parts += [n for n in module.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [n.name for n in parts if isinstance(n, ast.FunctionDef)] == ["generate_cmd"]
    tree = ast.Module(body=parts, type_ignores=[])
    modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m == "rich" or m.startswith("rich.")]
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "Live" not in names and "render_stream" not in names


def test_stream_generation_shows_each_step_and_nothing_when_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with stream_generation([1, 2, 3], None, live=False) as on_token:
        assert on_token is None
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80, color_system=None)
    monkeypatch.setattr(render_generate_module, "stderr_console", lambda: console)
    with stream_generation([1, 2, 3], None) as on_token:
        assert on_token is not None
        on_token([41])
        on_token([41, 42])
    shown = screen.getvalue()
    assert "[1, 2, 3]" in shown and "41 42" in shown


@pytest.mark.parametrize("mode", list(GenerationMode))
def test_on_token_sees_the_tokens_so_far_once_per_step(mode: GenerationMode) -> None:
    frames: list[list[int]] = []
    request = GenerationRequest(prompts=([1, 2, 3],), max_new_tokens=4)
    done = generate_text(load_model("lesson-tiny"), request, None, mode=mode,
                         on_token=lambda new: frames.append(list(new)))
    assert frames == [done.new_tokens[:i] for i in range(1, len(done.new_tokens) + 1)]


# --- the result judges, the renderer draws -----------------------------------------------------


def timed(tokens: list[int], cache_bytes: int = 0) -> Timed:
    return Timed(tokens, [], prefill_seconds=0.01, decode_seconds=0.02, cache_bytes=cache_bytes)


def result(cached: Timed | None, formula: int, check: CacheCheck | None = None) -> GenerateResult:
    return GenerateResult(spec_name="s", origin="o", dtype="float32", prompt_tokens=[1],
                          new_tokens=[5, 6, 7], text=None, new_text=None, cached=cached,
                          uncached=timed([5, 6, 7]) if check else None, kv_formula_bytes=formula,
                          check=check)


def drawn(shown: GenerateResult) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(render_generate(shown))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_verdicts_come_with_the_result() -> None:
    equal, unequal = result(timed([5, 6, 7], 96), 96), result(timed([5, 6, 7], 64), 96)
    assert equal.kv_matches_formula and not unequal.kv_matches_formula
    assert (equal.kv_allocated_bytes, result(None, 96).kv_allocated_bytes) == (96, 0)
    assert timed([5, 6, 7]).decode_steps == 2 and timed([]).decode_steps == 0
    ok = CacheCheck(identical_tokens=True, max_abs_logit_diff=1e-7, tolerance=1e-4)
    assert ok.ok and ok.failure is None
    off = CacheCheck(identical_tokens=True, max_abs_logit_diff=2e-4, tolerance=1e-4,
                     logit_scale=3.0)
    assert off.failure == ("cached and uncached generation differ: tokens identical True, max "
                           "|logit difference| 2.000e-04 > 0.0001 (= 1024 eps x the logits' "
                           "scale 3)")
    assert not CacheCheck(False, 0.0, 1e-4).ok and CacheCheck(False, 0.0, 1e-4).failure


def test_the_renderer_draws_the_results_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Verdicts flipped on the result, the figures left as they are: the table follows the
    verdicts, so it judges nothing itself."""
    check = CacheCheck(identical_tokens=True, max_abs_logit_diff=1e-7, tolerance=1e-4)
    shown = result(timed([5, 6, 7], 96), 96, check)
    assert " equal" in drawn(shown) and "OK  tokens identical" in drawn(shown)
    monkeypatch.setattr(GenerateResult, "kv_matches_formula", property(lambda self: False))
    monkeypatch.setattr(CacheCheck, "ok", property(lambda self: False))
    monkeypatch.setattr(Timed, "decode_steps", property(lambda self: 99))
    flipped = drawn(shown)
    assert "allocated 96 B (96 B) DIFFER" in flipped
    assert "FAILED  tokens identical" in flipped and "(99 steps in" in flipped

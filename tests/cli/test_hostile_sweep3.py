"""Hostile sweep 3: the older commands (params, validate, run, generate, trace, depth-sweep).

Each class found: a comma list that silently dropped or doubled a repeated entry (a sweep
takes each point once, as memory / perf refuse --batch 1,1), an option the command then
ignored (refused, naming what it needs), and a SPEC path through a broken symlink. Every
case asserts exit 2, one `tfcli: error:` line naming the option, and no traceback.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.cli.guarded import run_in_memory


def refused(*args: str) -> str:
    code, out, err = run_in_memory(*args)
    assert code == 2, (args[:6], code, err[:300])
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfcli: error: "), err[:500]
    return err


def accepted(*args: str) -> str:
    code, out, err = run_in_memory(*args)
    assert code == 0, (args[:6], code, err[:300])
    return out


SWEEP = ("depth-sweep", "lesson-tiny", "-q", "-f", "json", "--seq-len", "4", "--depths", "1")


# --- depth-sweep: its comma lists, each entry once ------------------------------------------

@pytest.mark.parametrize(("args", "words"), [
    (("--depths", "4,4"), "--depths repeats 4"),
    (("--depths", "1,2,1,2"), "--depths repeats 1, 2"),
    (("--variants", "pre,pre"), "--variants names 'pre' more than once"),
    (("--variants", "pre,,post"), "--variants has an empty name"),
    (("--variants", ","), "--variants has an empty name"),
    (("--variants", "pree"), "did you mean 'pre'?"),
    (("--variants", "[bold]x[/]"), "(got '[bold]x[/]')"),
])
def test_depth_sweep_lists_name_each_entry_once(args: tuple[str, ...], words: str) -> None:
    assert words in refused(*SWEEP, *args)


def test_depth_sweep_lists_of_100000_entries_answer_at_once() -> None:
    started = time.monotonic()
    for args in (("--variants", ",".join(["pre"] * 100_000)),
                 ("--variants", ",".join(["x"] * 100_000)),
                 ("--depths", ",".join(str(i % 10_000 + 1) for i in range(100_000)))):
        assert "once" in refused(*SWEEP, *args) or "one of" in refused(*SWEEP, *args)
    assert time.monotonic() - started < 5  # a quadratic count took minutes


def test_depth_sweep_unsorted_depths_still_run() -> None:
    accepted(*SWEEP[:-1], "2,1", "--variants", " pre , post ")


@pytest.mark.parametrize(("sublayer", "override", "name"), [
    ("linear", ("--init-std", "0.5"), "--init-std"),
    ("linear", ("--n-heads", "2"), "--n-heads"),
    ("linear", ("--d-ff", "8"), "--d-ff"),
    ("attention", ("--d-ff", "8"), "--d-ff"),
    ("ffn", ("--n-heads", "2"), "--n-heads"),
    ("ffn", ("--n-kv-heads", "2"), "--n-kv-heads"),
])
def test_depth_sweep_refuses_an_override_its_sublayer_never_reads(sublayer: str,
                                                                  override: tuple[str, str],
                                                                  name: str) -> None:
    err = refused(*SWEEP, "--sublayer", sublayer, *override)
    assert f"--sublayer {sublayer} does not use {name}" in err


def test_depth_sweep_overrides_a_sublayer_reads_still_apply() -> None:
    accepted(*SWEEP, "--sublayer", "attention", "--n-heads", "2")
    accepted(*SWEEP, "--sublayer", "ffn", "--d-ff", "8", "--init-std", "0.05")
    accepted(*SWEEP, "--sublayer", "linear", "--d-model", "8")


# --- a SPEC path through a broken symlink ----------------------------------------------------

@pytest.fixture
def broken_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a Hub lookup would be the bug
    (tmp_path / "loop_a").symlink_to("loop_b")
    (tmp_path / "loop_b").symlink_to("loop_a")
    (tmp_path / "dangling").symlink_to("nowhere")
    return tmp_path


@pytest.mark.parametrize(("spec", "words"), [
    ("loop_a", "loop_a: is a symlink loop"),
    ("loop_a/config.json", "goes through loop_a, which is a symlink loop"),
    ("dangling", "dangling: is a symlink to 'nowhere', which does not exist"),
    ("dangling/x", "goes through dangling, which is a symlink to 'nowhere'"),
])
@pytest.mark.parametrize("command", ["params", "import-config", "run"])
def test_a_broken_symlink_is_named_not_no_such_file_or_a_hub_id(broken_links: Path, spec: str,
                                                                 words: str, command: str) -> None:
    err = refused(command, spec)
    assert words in err and "Hub" not in err and "bundled" not in err


def test_validate_names_the_broken_link_too(broken_links: Path) -> None:
    code, out, _ = run_in_memory("validate", "loop_a", "dangling/x")
    assert code == 2 and "symlink loop" in out and "symlink to 'nowhere'" in out


# --- options a command would ignore ----------------------------------------------------------

def test_trace_refuses_a_seed_without_execute() -> None:
    """The analytic trace draws nothing: --seed without --execute changed nothing."""
    assert "--seed applies only with --execute" in refused("trace", "lesson-tiny", "--seed", "3")
    out = accepted("trace", "lesson-tiny", "--seq-len", "4", "--depth", "1", "--execute",
                   "--seed", "3", "-f", "json")
    assert '"seed": 3' in out


# --- run: which text of a batch is wrong -----------------------------------------------------

@pytest.mark.parametrize(("texts", "words"), [
    (("a", ""), "--text 2 of 2 is empty"),
    (("", "a", "b"), "--text 1 of 3 is empty"),
    (("a", "x" * 100), "--text 2 of 2 is 100 tokens, longer than 64"),
    (("",), "--text is empty"),
])
def test_run_names_the_text_of_a_batch_at_fault(texts: tuple[str, ...], words: str) -> None:
    assert words in refused("run", "lesson-tiny", *texts)


# --- params: a --seq-len past learned positions, as the other commands -----------------------

@pytest.mark.parametrize("command", ["params", "trace", "memory"])
def test_every_command_refuses_a_seq_len_past_learned_positions(command: str) -> None:
    err = refused(command, "gpt2", "--seq-len", "1025")
    assert "--seq-len 1025 exceeds max_seq_len 1024 of gpt2" in err


def test_params_still_notes_a_rope_cache_past_max_seq_len() -> None:
    assert "beyond llama-2-7b's max_seq_len" in accepted("params", "llama-2-7b", "--seq-len", "8192")


# --- depth-sweep --weight-scale past what --dtype holds --------------------------------------

@pytest.mark.parametrize(("scale", "dtype"), [("3e38", "float32"), ("2.2e37", "float32"),
                                              ("1.2e307", "float64"), ("1e308", "float64")])
def test_a_weight_scale_whose_draws_overflow_the_dtype_is_refused(scale: str, dtype: str) -> None:
    """The matrix would be inf at layer 1 (nothing measured), and the cast's RuntimeWarning
    escaped errstate in the thread that draws the layers."""
    err = refused("depth-sweep", "--sublayer", "linear", "--depths", "1,2", "-q",
                  "--weight-scale", scale, "--dtype", dtype)
    assert f"overflows {dtype} weights: at most" in err and "Warning" not in err


def test_a_large_weight_scale_that_fits_is_still_measured() -> None:
    out = accepted("depth-sweep", "--sublayer", "linear", "--depths", "1,2", "-q", "-f", "json",
                   "--weight-scale", "1e30", "--dtype", "float32")
    assert '"weight_scale": 1e+30' in out


def test_generate_says_when_ignore_eos_has_nothing_to_ignore() -> None:
    """Random weights have no end-of-sequence token: --ignore-eos changed nothing, silently."""
    args = ("generate", "lesson-tiny", "--tokens", "1", "--max-new-tokens", "2", "-f", "json")
    assert "--ignore-eos has no effect: random weights have no end-of-sequence token" in \
        accepted(*args, "--ignore-eos")
    assert "ignore-eos" not in accepted(*args)


def test_ignore_eos_still_gets_past_a_malformed_eos_token_id(monkeypatch) -> None:
    """Before, --ignore-eos never read generation_config.json; it still is the way past a bad one."""
    from types import SimpleNamespace

    from tfcli.analysis.generate import timed as generation
    from tfcli.checkpoints import eos
    from tfcli.core.errors import BadInputError

    def malformed(source: str | None, vocab_size: int) -> tuple[int, ...]:
        raise BadInputError("m/generation_config.json: eos_token_id must be a token id")

    monkeypatch.setattr(eos, "eos_tokens", malformed)
    model = SimpleNamespace(weights_dir="m", spec=SimpleNamespace(vocab_size=300))
    assert generation.stop_tokens(model, 7, ignore_eos=True) == ((7,), ())
    with pytest.raises(BadInputError, match="eos_token_id"):
        generation.stop_tokens(model, 7, ignore_eos=False)


def test_trace_refuses_a_seq_len_that_both_src_and_tgt_len_override() -> None:
    err = refused("trace", "t5-small", "--seq-len", "4", "--src-len", "8", "--tgt-len", "8")
    assert "--seq-len 4 sets the lengths --src-len and --tgt-len leave out" in err
    out = accepted("trace", "t5-small", "--seq-len", "4", "--src-len", "8", "-f", "json")
    assert '"src_len": 8' in out and '"tgt_len": 4' in out

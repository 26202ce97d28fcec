"""The Python API (tfcli/api/model.py): every command's result object, got from Python, is the
JSON the command prints; its errors name the API's parameters, the command line's its flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tfcli
from tfcli.core.errors import BadInputError
from tfcli.render.output import json_safe
from benchmarks.json_identity import is_timed, scrub
from tests.cli.guarded import run_in_memory

def _cli_json(*args: str) -> Any:
    code, out, err = run_in_memory(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _same(result: Any, *args: str) -> None:
    """The result's dict is the command's JSON; a real run's timings (run, generate,
    --execute) are masked as benchmarks/json_identity.py masks them, the rest compared whole."""
    timed = is_timed(" ".join(args))
    assert scrub(json_safe(result.to_dict()), timed) == scrub(_cli_json(*args), timed)


CASES = [
    (lambda: tfcli.load("gpt2").params(), ("params", "gpt2")),
    (lambda: tfcli.load("llama-3-8b", layers=2).params(seq_len=8192, batch=4, kv_dtype="bfloat16"),
     ("params", "llama-3-8b", "--layers", "2", "--seq-len", "8192", "--batch", "4",
      "--kv-dtype", "bfloat16")),
    (lambda: tfcli.load("lesson-tiny").trace(seq_len=8, depth=1),
     ("trace", "lesson-tiny", "--seq-len", "8", "--depth", "1")),
    (lambda: tfcli.load("lesson-tiny").run(tokens="1,2,3"), ("run", "lesson-tiny", "--tokens", "1,2,3")),
    (lambda: tfcli.load("lesson-tiny").generate(tokens="1,2", max_new_tokens=4, mode="check"),
     ("generate", "lesson-tiny", "--tokens", "1,2", "--max-new-tokens", "4", "--check-cache")),
    (lambda: tfcli.depth_sweep(sublayer="linear", d_model=8, seq_len=4, depths=(1, 4)),
     ("depth-sweep", "--sublayer", "linear", "--d-model", "8", "--seq-len", "4", "--depths", "1,4")),
    (lambda: tfcli.load("gpt2").memory(seq_len=512, train=True, gpus=2, zero=1),
     ("memory", "gpt2", "--seq-len", "512", "--train", "--gpus", "2", "--zero", "1")),
    (lambda: tfcli.load("gpt2").memory(batch=[1, 8], seq_len=[128, 1024], gpu="h100"),
     ("memory", "gpt2", "--batch", "1,8", "--seq-len", "128,1024", "--gpu", "h100")),
    (lambda: tfcli.load("gpt2").perf("h100", seq_len=512, train=True, train_tokens=1e9),
     ("perf", "gpt2", "--gpu", "h100", "--seq-len", "512", "--train", "--train-tokens", "1e9")),
    (lambda: tfcli.diff("llama-2-7b", "mistral-7b", seq_len=4096),
     ("diff", "llama-2-7b", "mistral-7b", "--seq-len", "4096")),
    (lambda: tfcli.gpus(), ("gpus",)),
    (lambda: tfcli.specs(), ("specs",)),
]


@pytest.mark.parametrize(("call", "args"), CASES, ids=[" ".join(a[:2]) for _, a in CASES])
def test_each_result_is_the_json_its_command_prints(call: Any, args: tuple[str, ...]) -> None:
    _same(call(), *args)


def test_a_trace_check_is_trace_execute() -> None:
    model = tfcli.load("lesson-tiny")
    both = model.check_trace(model.trace(seq_len=8, depth=1))
    assert both.check.ok
    _same(both, "trace", "lesson-tiny", "--seq-len", "8", "--depth", "1", "--execute")


def test_load_takes_every_spec_form(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(tfcli.load("lesson-tiny").source.load_spec().model_dump_json())
    assert tfcli.load(str(path)).params().total == tfcli.load("lesson-tiny").params().total
    assert tfcli.load(tfcli.resolve_source("gpt2")).spec.name == "gpt2"
    assert tfcli.load("gpt2", layers=2).spec.n_layers == 2


@pytest.mark.parametrize(("call", "api_words", "flag_words"), [
    (lambda: tfcli.load("gpt2").memory(tp=2),
     "tp applies only with train", ("memory", "gpt2", "--tp", "2")),
    (lambda: tfcli.load("t5-small").trace(seq_len=8, src_len=4, tgt_len=4),
     "seq_len 8 sets the lengths src_len and tgt_len",
     ("trace", "t5-small", "--seq-len", "8", "--src-len", "4", "--tgt-len", "4")),
    (lambda: tfcli.load("gpt2").memory(batch=[1, 8], fit=True, gpu="h100"),
     "fit searches the batch and seq_len itself: give batch and seq_len one value each",
     ("memory", "gpt2", "--batch", "1,8", "--fit", "--gpu", "h100")),
    (lambda: tfcli.load("lesson-tiny").run(tokens="1", normalize=True, pool="none"),
     "normalize scales a sentence embedding: give pool",
     ("run", "lesson-tiny", "--tokens", "1", "--normalize", "--pool", "none")),
])
def test_errors_name_parameters_in_python_and_flags_on_the_command_line(
        call: Any, api_words: str, flag_words: tuple[str, ...]) -> None:
    with pytest.raises(BadInputError) as raised:
        call()
    assert api_words in raised.value.message and "--" not in raised.value.message
    code, _, err = run_in_memory(*flag_words)
    assert code == 2
    assert "--" + api_words.split()[0].replace("_", "-") in err


def test_a_generation_mode_is_named_as_python_or_the_flag() -> None:
    model = tfcli.load("lesson-tiny")
    assert model.generate(tokens="1", max_new_tokens=2, mode="no_cache").new_tokens == \
        model.generate(tokens="1", max_new_tokens=2, mode="no-cache").new_tokens
    with pytest.raises(BadInputError, match="mode"):
        model.generate(tokens="1", mode="fast")


def test_importing_tfcli_loads_no_analysis() -> None:
    """`import tfcli` is cheap: the API and what it needs load on first use."""
    import subprocess
    import sys

    code = ("import sys, tfcli; assert 'tfcli.api' not in sys.modules; tfcli.load; "
            "assert 'tfcli.api' in sys.modules and 'numpy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)

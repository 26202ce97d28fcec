"""`tfcli run` through the CLI: inputs, outputs, loss, npz, errors."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from tfcli.analysis.model_source import load_model
from tfcli.analysis.run.forward import _mlm_masked, cross_entropy
from tfcli.engine.model import forward


def run_json(invoke, *args: str) -> dict:
    result = invoke("run", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_text_input_is_utf8_bytes(invoke) -> None:
    data = run_json(invoke, "lesson-tiny", "--text", "hé")
    assert data["tokens"] == [[104, 195, 169]]
    assert len(data["hidden_norms"][0]) == 3
    assert data["logits_shape"] == [1, 3, 256]
    assert len(data["top_next"][0]) == 5
    assert data["loss_kind"] == "next-token cross-entropy"
    assert data["flops"] > 0 and data["seconds"] > 0


def test_random_tokens_are_seeded(invoke) -> None:
    a = run_json(invoke, "lesson-tiny", "--batch", "2", "--seq-len", "7", "--seed", "3")
    b = run_json(invoke, "lesson-tiny", "--batch", "2", "--seq-len", "7", "--seed", "3")
    assert a["tokens"] == b["tokens"] and a["hidden_norms"] == b["hidden_norms"]
    assert np.array(a["tokens"]).shape == (2, 7)


def test_random_weights_loss_is_near_uniform(invoke) -> None:
    # Tiny init std -> nearly uniform logits -> loss close to log(V).
    data = run_json(invoke, "gpt2", "--layers", "1", "--seq-len", "8")
    assert abs(data["loss"] - math.log(50257)) < 0.5


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def test_next_token_loss_is_teacher_forced_cross_entropy(invoke, tmp_path: Path) -> None:
    """Position t's logits score token t + 1, averaged over positions 0..T-2, checked against the
    saved logits."""
    out = tmp_path / "o.npz"
    spec = "lesson-tiny"
    data = run_json(invoke, spec, "--batch", "2", "--seq-len", "9", "--save-npz", str(out))
    saved = np.load(out)
    log_probs = _log_softmax(saved["logits"])  # (B, T, V)
    tokens = saved["tokens"]  # (B, T)
    picked = np.take_along_axis(log_probs[:, :-1], tokens[:, 1:, None], axis=-1)
    assert data["loss"] == pytest.approx(-picked.mean(), rel=1e-6)
    other_way = np.take_along_axis(log_probs[:, 1:], tokens[:, :-1, None], axis=-1)
    assert abs(-other_way.mean() + picked.mean()) > 1e-3  # the logits tell the pairings apart


def test_encoder_decoder_with_target(invoke) -> None:
    data = run_json(invoke, "t5-small", "--layers", "1", "--text", "abc", "--target", "xy")
    assert data["tokens"] == [[97, 98, 99]] and data["decoder_tokens"] == [[120, 121]]
    assert len(data["encoder_norms"][0]) == 3 and len(data["hidden_norms"][0]) == 2


def test_bert_pooler_no_head_no_loss(invoke) -> None:
    data = run_json(invoke, "bert-base", "--layers", "1", "--tokens", "101,2000,102")
    assert data["loss"] is None and data["logits_shape"] is None


def test_encoder_with_head_reports_mlm_loss(invoke, write_spec) -> None:
    spec = write_spec("name: enc\nfamily: encoder\nvocab_size: 300\nmax_seq_len: 32\n"
                      "d_model: 16\nn_heads: 2\nn_layers: 1\nd_ff: 32\nnorm_placement: post\n")
    data = run_json(invoke, str(spec), "--seq-len", "20", "--seed", "4")
    assert data["loss_kind"].startswith("masked-LM")
    # The loss scores the ORIGINAL tokens at the masked positions of a forward pass over the
    # masked input (the last vocabulary id stands in for [MASK]).
    model = load_model(str(spec), seed=4)
    tokens = np.array(data["tokens"])  # (1, 20)
    masked, chosen = _mlm_masked(model.spec, tokens, seed=4)
    assert chosen.any() and (masked[chosen] == 299).all()
    assert (masked[~chosen] == tokens[~chosen]).all()
    log_probs = _log_softmax(forward(model.spec, model.weights, masked).logits)
    picked = np.take_along_axis(log_probs, tokens[..., None], axis=-1)[..., 0]
    assert data["loss"] == pytest.approx(-picked[chosen].mean(), rel=1e-6)


def test_save_npz(invoke, tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    result = invoke("run", "lesson-tiny", "--tokens", "1,2,3", "--save-npz", str(out))
    assert result.exit_code == 0, result.output
    arrays = np.load(out)
    assert arrays["hidden"].shape == (1, 3, 16) and arrays["logits"].shape == (1, 3, 256)
    assert list(tmp_path.iterdir()) == [out]  # no temp file left behind
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask  # as any other file written here


def test_table_output(invoke) -> None:
    result = invoke("run", "lesson-tiny", "--text", "hi")
    assert result.exit_code == 0
    for text in ("output norm", "top-5", "GFLOP/s", "loss"):
        assert text in result.stdout


def test_top_probabilities_keep_three_significant_digits(invoke) -> None:
    """A random GPT-2's next-token probabilities are ~1/50257: the table must not print 0.000."""
    table = invoke("run", "gpt2", "--layers", "1", "--tokens", "1,2,3").stdout
    data = json.loads(invoke("run", "gpt2", "--layers", "1", "--tokens", "1,2,3", "-f", "json").stdout)
    top = data["top_next"][0][0]
    assert top["prob"] < 1e-3 and f"p={top['prob']:.3g}" in table  # cells may wrap


def test_errors(invoke, tmp_path: Path) -> None:
    cases = [
        (["lesson-tiny", "--tokens", "1,999"], "outside the vocabulary"),
        (["lesson-tiny", "--tokens", "a,b"], "comma-separated integers"),
        (["lesson-tiny", "--tokens", "1,,2"], "comma-separated integers"),
        (["lesson-tiny", "--tokens", ""], "--tokens is empty"),
        (["lesson-tiny", "--text", ""], "empty"),
        (["lesson-tiny", "--text", "a", "--tokens", "1"], "either --text or --tokens"),
        (["gpt2", "--layers", "1", "--seq-len", "2000"], "exceeds max_seq_len"),
        (["lesson-tiny", "--target", "x"], "only for encoder-decoder"),
        (["lesson-tiny", "--dtype", "float16"], "--dtype"),
        (["lesson-tiny", "--save-npz", str(tmp_path / "no" / "x.npz")], "does not exist"),
        (["lesson-tiny", "--save-npz", str(tmp_path)], "is a folder"),
        (["lesson-tiny", "--save-npz", ""], "needs a file name"),
        (["lesson-tiny", "--tokens", "1,2", "--seq-len", "5"], "do not apply to --text or --tokens"),
        (["lesson-tiny", "--text", "ab", "--batch", "2"], "do not apply to --text or --tokens"),
        (["t5-small", "--layers", "1", "--tokens", "1,2", "--target", ""], "--target is empty"),
    ]
    for args, expected in cases:
        result = invoke("run", *args)
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.output


def test_save_npz_write_failure_is_an_output_error_and_leaves_nothing(invoke, tmp_path: Path,
                                                                      monkeypatch) -> None:
    """A write that fails midway (here: disk full) is one message, exit 74 (EX_IOERR, issue
    28.2: a failed write is not bad input), and no file."""
    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", disk_full)
    result = invoke("run", "lesson-tiny", "--tokens", "1,2", "--save-npz", str(tmp_path / "o.npz"))
    assert result.exit_code == 74, result.output
    assert "cannot write" in result.stderr and "No space left" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_negative_seed_is_refused(invoke) -> None:
    for command in (["run", "lesson-tiny"], ["generate", "lesson-tiny", "--tokens", "1"]):
        result = invoke(*command, "--seed", "-1")
        assert result.exit_code == 2 and "Traceback" not in result.output


def test_encoder_decoder_tokens_alone_report_the_decoder_start_token(invoke) -> None:
    """Without --target the decoder runs its start token 0 alone; the rows say so."""
    data = run_json(invoke, "t5-small", "--layers", "1", "--tokens", "5,6,7,8")
    assert data["decoder_tokens"] == [[0]] and len(data["hidden_norms"][0]) == 1
    result = invoke("run", "t5-small", "--layers", "1", "--tokens", "5,6,7,8", "--format", "csv")
    assert result.stdout.splitlines()[1].split(",")[:3] == ["0", "0", "0"]


def test_memory_guard_refuses_with_figures(invoke) -> None:
    result = invoke("run", "mixtral-8x7b", "--dtype", "float64")
    assert result.exit_code == 2
    assert "needs" in result.stderr and "GiB" in result.stderr and "--layers" in result.stderr


def test_cross_entropy_matches_a_direct_formula() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 5, 11))
    targets = rng.integers(0, 11, (2, 5))
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    expected = -np.log(np.take_along_axis(probs, targets[..., None], -1)).mean()
    assert math.isclose(cross_entropy(logits, targets), expected, rel_tol=1e-12)


def test_memory_guard_refuses_llama_2_70b_before_allocating(invoke, monkeypatch) -> None:
    from tfcli.analysis.allocation import MemoryLimit

    monkeypatch.setattr("tfcli.analysis.allocation.memory_limit",
                        lambda sources=None: MemoryLimit(int(24.8e9), "MemAvailable"))
    result = invoke("run", "llama-2-70b", "--tokens", "1,2")
    assert result.exit_code == 2 and result.stdout == ""
    assert "run of llama-2-70b (float32, batch 1, 2 tokens) needs about 257.0 GiB (weights 257.0 GiB" \
        in result.stderr
    assert ("over the 23.1 GiB this process may use (MemAvailable); reduce "
            "--batch, --seq-len or --layers") in result.stderr

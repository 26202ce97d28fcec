"""`tfcli run` with several --text and a sentence embedding (issue 16): a padded batch under a
mask gives each text the outputs it has alone; --pool / --normalize; what is refused; the
embedding in the table, the JSON and --save-npz."""

from __future__ import annotations

import json

import numpy as np


def _json(invoke, *args: str) -> dict:
    result = invoke("run", *args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_decoder_batch_of_texts_gives_each_text_its_own_outputs(invoke) -> None:
    """GPT-2 (byte tokenizer on random weights): the short text right-padded beside a long one
    has the hidden norms, top-5 next tokens and embedding it has alone."""
    short, long = "Hi there", "The Transformer is a model of attention"
    alone = _json(invoke, "gpt2", "--layers", "1", "--text", short, "--pool", "last")
    both = _json(invoke, "gpt2", "--layers", "1", "--text", short, "--text", long,
                 "--pool", "last")
    assert len(both["tokens"]) == 2 and both["tokens"][0][: len(short)] == alone["tokens"][0]
    np.testing.assert_allclose(both["hidden_norms"][0], alone["hidden_norms"][0], rtol=1e-5)
    assert [t["token"] for t in both["top_next"][0]] == [t["token"] for t in alone["top_next"][0]]
    np.testing.assert_allclose(both["embedding"]["vectors"][0], alone["embedding"]["vectors"][0],
                               rtol=1e-5, atol=1e-5)
    assert both["embedding"]["similarity"] is not None and alone["embedding"]["similarity"] is None


def test_encoders_pool_by_default_and_decoders_do_not(invoke) -> None:
    assert _json(invoke, "bert-base", "--layers", "1")["embedding"]["pooling"] == "mean"
    assert _json(invoke, "gpt2", "--layers", "1")["embedding"] is None
    assert _json(invoke, "bert-base", "--layers", "1", "--pool", "none")["embedding"] is None
    unit = _json(invoke, "bert-base", "--layers", "1", "--pool", "cls", "--normalize")
    assert unit["embedding"]["method"] == "the first token, L2-normalised"
    np.testing.assert_allclose(unit["embedding"]["norms"], [1.0], rtol=1e-12)


def test_the_table_shows_the_embedding_and_the_similarities(invoke) -> None:
    result = invoke("run", "bert-base", "--layers", "1", "--text", "a cat", "--text", "a dog")
    assert result.exit_code == 0, result.stderr
    assert "sentence embedding (mean over the real tokens; 768 dims)" in result.stdout
    assert "cosine similarity between the sequences" in result.stdout


def test_save_npz_carries_the_embedding_and_the_mask(invoke, tmp_path) -> None:
    path = tmp_path / "out.npz"
    result = invoke("run", "bert-base", "--layers", "1", "--text", "a cat", "--text",
                    "a much longer text", "--normalize", "--save-npz", str(path))
    assert result.exit_code == 0, result.stderr
    saved = np.load(path)
    assert saved["embedding"].shape == (2, 768) and saved["attention_mask"].shape == saved["tokens"].shape
    np.testing.assert_allclose(np.linalg.norm(saved["embedding"], axis=-1), 1.0, rtol=1e-12)
    assert not saved["attention_mask"][0].all() and saved["attention_mask"][1].all()


def test_refusals_are_one_line(invoke) -> None:
    cases = [("gpt2", "--layers", "1", "--normalize"),  # nothing to normalise
             ("t5-small", "--layers", "1", "--text", "a", "--text", "b", "--target", "c"),
             ("bert-base", "--pool", "max")]
    for args in cases:
        result = invoke("run", *args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output and result.stderr.strip().count("\n") <= 2

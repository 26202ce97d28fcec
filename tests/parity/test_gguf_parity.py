"""A real GGUF (SmolLM2-135M-Instruct, Q4_1) through tfcli against transformers loading the same
file (`from_pretrained(..., gguf_file=...)`): the parameter count, the tokenizer built from the
GGUF metadata, logits, and 32 greedy tokens from a text prompt."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from tests.checkpoints.gguf_files import SMOLLM2_PARAMETERS, fetch_smollm2
from tests.cli.guarded import run_in_memory
from tests.tolerance import assert_close

PROMPT = "The capital of France is"
TEXTS = ["Hello, world! <|im_end|>", "  two spaces, tabs\tand\nnewlines", "naïve café 東京 123456",
         "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"]


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fetch_smollm2(tmp_path_factory.mktemp("smollm2"))


@pytest.fixture(scope="module")
def reference(gguf_path: Path) -> tuple[object, object]:
    kwargs = {"gguf_file": gguf_path.name}
    model = transformers.AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, dtype=torch.float32, **kwargs)
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf_path.parent, **kwargs)
    return model.eval(), tokenizer


def test_count_equals_transformers(gguf_path: Path, reference: tuple[object, object]) -> None:
    code, out, err = run_in_memory("params", str(gguf_path), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    model, _ = reference
    assert report["total"] == model.num_parameters() == SMOLLM2_PARAMETERS
    assert report["stored_weights"]["equal"] is True
    types = {g["dtype"] for g in report["stored_weights"]["groups"]}
    assert types == {"Q8_0", "Q4_1", "F32"}


def test_tokenizer_ids_and_text_equal_transformers(gguf_path: Path,
                                                   reference: tuple[object, object]) -> None:
    from tfcli.checkpoints.gguf_tokenizer import gguf_tokenizer

    ours = gguf_tokenizer(str(gguf_path))
    _, theirs = reference
    for text in TEXTS:
        ids = theirs(text, add_special_tokens=False).input_ids
        assert ours.encode(text).ids == ids, text
        assert ours.decode(ids, skip_special_tokens=False) == \
            theirs.decode(ids, skip_special_tokens=False)


def test_logits_match_transformers(gguf_path: Path, reference: tuple[object, object]) -> None:
    from tfcli.checkpoints.gguf_spec import spec_from_gguf_file
    from tfcli.checkpoints.gguf_weights import load_gguf_weights
    from tfcli.engine.model import forward

    model, tokenizer = reference
    ids = np.array([tokenizer(TEXTS[3], add_special_tokens=False).input_ids])
    spec = spec_from_gguf_file(str(gguf_path))
    logits = forward(spec, load_gguf_weights(gguf_path, spec), ids).logits
    with torch.no_grad():
        expected = model(torch.from_numpy(ids)).logits.numpy()
    assert np.abs(logits - expected).max() <= 1e-3 * max(1.0, float(np.abs(expected).max()))
    assert_close(logits, expected, ops=4 * spec.d_model * spec.n_layers)


def test_greedy_generation_equals_transformers(gguf_path: Path,
                                               reference: tuple[object, object]) -> None:
    model, tokenizer = reference
    code, out, err = run_in_memory("generate", str(gguf_path), "--prompt", PROMPT,
                                   "--max-new-tokens", "32", "--check-cache", "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    prompt = tokenizer(PROMPT, add_special_tokens=False).input_ids
    assert result["prompt_tokens"] == prompt
    with torch.no_grad():
        expected = model.generate(torch.tensor([prompt]), max_new_tokens=32,
                                  do_sample=False)[0, len(prompt):].tolist()
    # both stop after the model's EOS (<|im_end|>, id 2: at step 30 for this prompt)
    assert len(expected) == 32 or expected[-1] == tokenizer.eos_token_id
    assert result["tokens"] == expected
    assert result["new_text"] == tokenizer.decode(expected, skip_special_tokens=False)

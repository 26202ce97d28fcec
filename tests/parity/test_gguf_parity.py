"""Real GGUF files through tfcli against transformers loading the same file
(`from_pretrained(..., gguf_file=...)`): SmolLM2-135M-Instruct (Q4_1, llama architecture,
byte-level BPE) and gemma-3-270m (Q4_K_M: Q4_K, Q5_0, Q6_K, Q8_0; sandwich norms, 5:1
local/global layers, sentencepiece). The parameter count, the tokenizer built from the GGUF
metadata, logits within 1e-3, and greedy generation from a text prompt."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest

from tests.checkpoints.gguf_files import (
    GEMMA3_PARAMETERS,
    SMOLLM2_PARAMETERS,
    fetch_gemma3,
    fetch_smollm2,
)
from tests.cli.guarded import run_in_memory


@dataclass(frozen=True)
class Case:
    fetch: Callable[[Path], Path]
    parameters: int
    types: set[str]
    prompt: str
    texts: tuple[str, ...]


CASES = {
    "smollm2": Case(fetch_smollm2, SMOLLM2_PARAMETERS, {"Q8_0", "Q4_1", "F32"},
                    "The capital of France is",
                    ("Hello, world! <|im_end|>", "  two spaces, tabs\tand\nnewlines",
                     "naïve café 東京 123456", "<|im_start|>user\nWhat is 2+2?<|im_end|>\n")),
    "gemma3": Case(fetch_gemma3, GEMMA3_PARAMETERS, {"Q4_K", "Q5_0", "Q6_K", "Q8_0", "F32"},
                   "The capital of France is Paris. The capital of Germany is",
                   ("  two  spaces\tand\nnewline", "naïve café 東京 123456 😀",
                    "<start_of_turn>user\nhi<end_of_turn>\n", "x" * 50 + "   end")),
}


@dataclass(frozen=True)
class Loaded:
    case: Case
    path: Path
    model: object
    tokenizer: object


@contextmanager
def one_reader_per_file() -> Iterator[None]:
    """transformers parses the file with gguf's GGUFReader three times (config, weights,
    tokenizer), each walking every metadata field in Python (gemma-3-270m: ~20 s each here);
    one read-only reader per path serves all three, the reference staying transformers' own."""
    readers: dict[str, gguf.GGUFReader] = {}
    original = gguf.GGUFReader

    def shared(path: str | Path, mode: str = "r") -> gguf.GGUFReader:
        if mode != "r":
            return original(path, mode)
        if str(path) not in readers:
            readers[str(path)] = original(path, mode)
        return readers[str(path)]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gguf, "GGUFReader", shared)
        yield


@pytest.fixture(scope="module", params=sorted(CASES))
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    import torch
    import transformers
    case = CASES[request.param]
    path = case.fetch(tmp_path_factory.mktemp(request.param))
    kwargs = {"gguf_file": path.name}
    with one_reader_per_file():
        model = transformers.AutoModelForCausalLM.from_pretrained(
            path.parent, dtype=torch.float32, **kwargs)
        tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, **kwargs)
    return Loaded(case, path, model.eval(), tokenizer)


def test_count_equals_transformers(loaded: Loaded) -> None:
    code, out, err = run_in_memory("params", str(loaded.path), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["total"] == loaded.model.num_parameters() == loaded.case.parameters
    assert report["stored_weights"]["equal"] is True
    assert {g["dtype"] for g in report["stored_weights"]["groups"]} == loaded.case.types


def test_tokenizer_ids_and_text_equal_transformers(loaded: Loaded) -> None:
    from tfcli.checkpoints.gguf.tokenizer import gguf_tokenizer

    ours = gguf_tokenizer(str(loaded.path))
    for text in (loaded.case.prompt, *loaded.case.texts):
        ids = loaded.tokenizer(text).input_ids
        assert ours.encode(text).ids == ids, text
        assert ours.decode(ids, skip_special_tokens=False) == \
            loaded.tokenizer.decode(ids, skip_special_tokens=False)


def test_logits_match_transformers(loaded: Loaded) -> None:
    import torch
    from tfcli.checkpoints.gguf.spec import spec_from_gguf_file
    from tfcli.checkpoints.gguf.weights import load_gguf_weights
    from tfcli.engine.model import forward

    ids = np.array([loaded.tokenizer(loaded.case.texts[-1]).input_ids])
    spec = spec_from_gguf_file(str(loaded.path))
    logits = forward(spec, load_gguf_weights(loaded.path, spec), ids).logits
    with torch.no_grad():
        expected = loaded.model(torch.from_numpy(ids)).logits.numpy()
    # the bound, 1e-3, on logits of magnitude ~30; float32 sums over d_model * layers
    assert np.abs(logits - expected).max() <= 1e-3 * max(1.0, float(np.abs(expected).max()))


# greedy tokens compared, each also checked against recomputing the whole prefix (--check-cache):
# 16 keep the test to ~10 s a model here, where 32 took 19-40 s
NEW_TOKENS = 16


def test_greedy_generation_equals_transformers(loaded: Loaded) -> None:
    import torch
    code, out, err = run_in_memory("generate", str(loaded.path), "--text", loaded.case.prompt,
                                   "--max-new-tokens", str(NEW_TOKENS), "--check-cache",
                                   "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    prompt = loaded.tokenizer(loaded.case.prompt).input_ids
    assert result["prompt_tokens"] == prompt
    with torch.no_grad():
        expected = loaded.model.generate(torch.tensor([prompt]), max_new_tokens=NEW_TOKENS,
                                         do_sample=False)[0, len(prompt):].tolist()
    # both stop after the model's end-of-sequence token when it comes first
    assert len(expected) == NEW_TOKENS or expected[-1] in (loaded.tokenizer.eos_token_id,)
    assert result["tokens"] == expected
    assert result["new_text"] == loaded.tokenizer.decode(expected, skip_special_tokens=False)

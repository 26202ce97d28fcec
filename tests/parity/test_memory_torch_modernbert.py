"""tfcli memory's ModernBERT figures (tfcli/analysis/modernbert_memory.py) against what torch
really holds in small random ModernBertModel / ModernBertForMaskedLM instances: global and
local (sliding-window) layers at a length that materialises the local mask, eager and sdpa.
The inference peak (live tensor storages, op by op) within 15% and the bytes autograd saves
(saved_tensors_hooks), with and without gradient checkpointing, within 10%
(tests/parity/torch_memory.py measures; docs/memory.md quotes the sizes measured by hand).
One size, (2, 64), in CI."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import transformers as tf

from tests.parity.test_memory_torch import _ids
from tests.parity.torch_memory import forward_peak, saved_bytes
from tfcli.analysis.activations import Workload, inference_peak
from tfcli.analysis.saved_activations import saved_activations
from tfcli.checkpoints import spec_from_config_dir
from tfcli.errors import BadInputError
from tfcli.spec import Spec

SIZE = (2, 64)  # seq_len 64 reaches local_attention // 2: the local mask is built


def _config(**changes: object) -> tf.ModernBertConfig:
    # layers global, local, local (global_attn_every_n_layers 3), window 128; vocab 2048 so that
    # the masked-LM head's logits are its peak
    return tf.ModernBertConfig(**({
        "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 3,
        "intermediate_size": 128, "vocab_size": 2048, "pad_token_id": 0, "bos_token_id": 0,
        "eos_token_id": 0, "cls_token_id": 0, "sep_token_id": 0} | changes))


MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    "model": lambda: tf.ModernBertModel(_config()),
    "masked_lm": lambda: tf.ModernBertForMaskedLM(_config()),
}


@pytest.fixture(scope="module", params=list(MODELS))
def modernbert(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> tuple[tf.PreTrainedModel, Spec]:
    """(the random model, the spec tfcli reads from its saved config.json)."""
    torch.manual_seed(0)
    model = MODELS[request.param]()
    path: Path = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(path)
    return model, spec_from_config_dir(path)


def _ids2048(batch: int, seq_len: int) -> torch.Tensor:
    return _ids(batch, seq_len) * 10  # _ids draws below 200


def _training_run(model: tf.PreTrainedModel, ids: torch.Tensor) -> Callable[[], torch.Tensor]:
    """The masked-LM loss, or a loss on the bare model's last hidden state (whatever reads it
    saves it: the plan's head input)."""
    if isinstance(model, tf.ModernBertForMaskedLM):
        return lambda: model(input_ids=ids, labels=ids).loss
    return lambda: model(input_ids=ids).last_hidden_state.pow(2).mean()


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_inference_peak(modernbert: tuple[tf.PreTrainedModel, Spec], attention: str) -> None:
    model, spec = modernbert
    model.set_attn_implementation(attention)
    assert model.config._attn_implementation == attention
    model.eval()
    want = forward_peak(model, _ids2048(*SIZE))
    got = inference_peak(spec, Workload(*SIZE, 4), attention).bytes
    assert abs(got - want) <= 0.15 * want, (got, want)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_inference_peak_in_bfloat16(modernbert: tuple[tf.PreTrainedModel, Spec],
                                    attention: str) -> None:
    """16 bits: RoPE in float32 (q and k copies), eager's float32 softmax."""
    model, spec = modernbert
    half = copy.deepcopy(model).to(torch.bfloat16)
    half.set_attn_implementation(attention)
    half.eval()
    want = forward_peak(half, _ids2048(*SIZE))
    got = inference_peak(spec, Workload(*SIZE, 2), attention).bytes
    assert abs(got - want) <= 0.15 * want, (got, want)


@pytest.mark.parametrize("attention,recompute", [("eager", "none"), ("sdpa", "none"),
                                                 ("sdpa", "full")])
def test_saved_activations(modernbert: tuple[tf.PreTrainedModel, Spec], attention: str,
                           recompute: str) -> None:
    model, spec = modernbert
    model.set_attn_implementation(attention)
    model.train()
    if recompute == "full":
        model.activation_checkpointing_enable(
            activation_checkpointing_kwargs={"use_reentrant": False})
    try:
        ids = _ids2048(*SIZE)
        want = saved_bytes(model, _training_run(model, ids), ids)
        got = saved_activations(spec, Workload(*SIZE, 4), attention, recompute).total
        assert abs(got - want) <= 0.10 * want, (got, want)
    finally:
        model.activation_checkpointing_disable()


def test_saved_activations_in_bfloat16(modernbert: tuple[tf.PreTrainedModel, Spec]) -> None:
    model, spec = modernbert
    half = copy.deepcopy(model).to(torch.bfloat16)
    half.set_attn_implementation("sdpa")
    half.train()
    ids = _ids2048(*SIZE)
    want = saved_bytes(half, _training_run(half, ids), ids)
    got = saved_activations(spec, Workload(*SIZE, 2), "sdpa").total
    assert abs(got - want) <= 0.10 * want, (got, want)


def test_without_local_layers_is_refused_by_name(tmp_path: Path) -> None:
    """Every layer global: ModernBertModel still builds the local mask, of a window the spec
    no longer keeps."""
    tf.ModernBertModel(_config(global_attn_every_n_layers=1)).save_pretrained(tmp_path)
    spec = spec_from_config_dir(tmp_path)
    for estimate in (lambda: inference_peak(spec, Workload(*SIZE, 4), "sdpa"),
                     lambda: saved_activations(spec, Workload(*SIZE, 4), "sdpa")):
        with pytest.raises(BadInputError, match="RoPE encoder without local layers"):
            estimate()

"""GLM-4.5's reader and table (tfcli/checkpoints/families/glm.py): DeepSeek-V3's routing fields
from a GLM config, the multi-token-prediction layer noted and - stored as the layer after the
last, as GLM-4.5-Air's checkpoint does - ignored by the checkpoint verdict."""

from __future__ import annotations

from pathlib import Path

from tests.checkpoints.test_configs import write_config
from tests.parity import published_configs as pub
from tfcli.checkpoints.configs import spec_from_config, spec_from_config_dir
from tfcli.checkpoints.families import TABLES
from tfcli.checkpoints.names import expand, expected_shape
from tfcli.checkpoints.stored import StoredTensor, differences
from tfcli.spec.blueprint import concrete_paths
from tfcli.spec.counts import components
from tfcli.spec.model import Spec


def test_the_routing_and_the_mtp_note(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, pub.GLM_4_5_AIR))
    assert (spec.router_scoring, spec.router_bias, spec.expert_groups, spec.topk_groups,
            spec.group_score, spec.norm_topk_prob, spec.dense_layers, spec.n_shared_experts) == \
        ("sigmoid", True, 1, 1, "top2_sum", True, [0], 1)
    assert "1 multi-token-prediction layer(s) (num_nextn_predict_layers) not built or counted" \
        in spec.description


def _stored(spec_config: dict) -> tuple[Spec, list[StoredTensor]]:
    """A spec and the tensors its checkpoint stores, shape for shape, from the table."""
    spec = spec_from_config(spec_config, "config.json")
    shapes = {path: c.shape for c in components(spec) if not c.tied
              for path in concrete_paths(spec, c.path)}
    tensors = []
    for rule in TABLES["glm4_moe"].rules:
        for name, ours in expand(rule, spec, "model."):
            if all(p in shapes for p in ours):
                tensors.append(StoredTensor(name, "BF16",
                                            expected_shape(rule, [shapes[p] for p in ours]), 0))
    return spec, tensors


def test_the_stored_mtp_layer_is_ignored() -> None:
    small = pub.GLM_4_5_AIR | {"hidden_size": 64, "num_attention_heads": 4, "head_dim": 16,
                               "num_key_value_heads": 2, "intermediate_size": 32,
                               "moe_intermediate_size": 16, "n_routed_experts": 4,
                               "num_experts_per_tok": 2, "vocab_size": 32}
    spec, tensors = _stored(small)
    assert differences(TABLES["glm4_moe"], spec, tensors) == ()
    mtp = [StoredTensor("model.layers.46.eh_proj.weight", "BF16", (64, 128), 0),
           StoredTensor("model.layers.46.mlp.experts.0.up_proj.weight", "BF16", (16, 64), 0)]
    assert differences(TABLES["glm4_moe"], spec, tensors + mtp) == ()
    stray = StoredTensor("model.layers.47.eh_proj.weight", "BF16", (64, 128), 0)
    assert differences(TABLES["glm4_moe"], spec, tensors + [stray]) == \
        ("unexpected model.layers.47.eh_proj.weight [64, 128]",)

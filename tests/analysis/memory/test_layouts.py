"""The memory planner's layout registry (tfcli/analysis/memory/layouts/__init__.py): which row
each bundled spec, attention and fused module picks, what every layout module defines, and the
import order that keeps the layouts below the dispatchers (no circle: a layout imports the
base layer only)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.engine.engine_specs import make_spec
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.layouts import LAYOUTS, layout_for
from tfcli.sources import load_spec

MEMORY = Path(__file__).resolve().parents[3] / "tfcli" / "analysis" / "memory"
# the base layer: what a layout may import of the planner (and tfcli.core / spec / engine /
# checkpoints below it)
BASE = ("base", "live", "saved_parts", "latent", "rope_layouts", "window", "seq2seq",
        "disentangled", "record")

# bundled spec -> the layout transformers' modules for it are walked by (sdpa, no fused modules)
BUNDLED = {
    "albert-base-v2": "generic", "bart-base": "bart", "bert-base": "generic",
    "deberta-v3-base": "deberta", "deepseek-v2-lite": "generic", "deepseek-v3": "generic",
    "distilbert-base-uncased": "generic", "electra-small-discriminator": "generic",
    "falcon-7b": "generic", "gemma-2-9b": "generic", "gemma-2b": "generic",
    "gemma-3-1b": "generic", "gpt-j-6b": "generic", "granite-3.3-8b": "generic",
    "granite-3.1-3b-a800m": "generic", "gpt-oss-20b": "generic", "gpt-oss-120b": "generic",
    "olmoe-1b-7b": "generic", "starcoder2-3b": "generic",
    "command-r7b": "generic", "smollm3-3b": "generic", "glm-4-9b": "generic",
    "glm-4.5-air": "generic", "llama-4-scout": "generic", "ernie-4.5-21b-a3b": "generic",
    "gpt2-medium": "gpt2", "gpt2": "gpt2",
    "lesson-tiny": "generic", "llama-2-70b": "generic", "llama-2-7b": "generic",
    "llama-3-8b": "generic", "llama-3.1-8b": "generic", "llama-3.2-1b": "generic",
    "mistral-7b": "generic", "mixtral-8x7b": "generic", "modernbert-base": "modernbert",
    "mt5-small": "t5", "olmo-2-7b": "generic", "phi-2": "generic", "phi-3-mini": "generic",
    "pythia-1.4b": "generic", "qwen1.5-moe-a2.7b": "generic", "qwen2.5-7b": "generic",
    "qwen3-30b-a3b": "generic", "qwen3-8b": "generic", "roberta-base": "generic",
    "stablelm-2-1.6b": "generic", "t5-small": "t5", "transformer-base": "bart",
    "umt5-small": "t5", "xlm-roberta-large": "generic",
}


def test_every_bundled_spec_has_its_row() -> None:
    bundled = sorted(p.stem for p in (MEMORY.parents[1] / "specs").glob("*.yaml"))
    assert sorted(BUNDLED) == bundled


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_specs_pick_their_layout(name: str) -> None:
    spec = load_spec(name)
    assert layout_for(spec, "sdpa", frozenset()).name == BUNDLED[name]
    assert layout_for(spec, "eager", frozenset({"qkv"})).name == BUNDLED[name]
    # the explicit keys come first: the implementation asked for, the checkpoint's modules
    assert layout_for(spec, "engine", frozenset()).name == "engine"
    assert layout_for(spec, "sdpa", frozenset({"falcon_qkv"})).name == "falcon"


def test_the_table_names_each_layout_once_and_ends_in_a_catch_all() -> None:
    names = [layout.name for layout in LAYOUTS]
    assert len(names) == len(set(names))
    assert LAYOUTS[-1].applies(make_spec("llama_gqa"), "sdpa", frozenset())
    for layout in LAYOUTS:
        assert callable(layout.module.live) and callable(layout.module.saved), layout.name


def _planner_imports(path: Path) -> set[str]:
    """The tfcli.analysis.memory modules `path` imports, anywhere in it (functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n.removeprefix("tfcli.analysis.memory.").split(".")[0] for n in names
                  if n.startswith("tfcli.analysis.memory.")}
    return found


@pytest.mark.parametrize("path", sorted((MEMORY / "layouts").glob("[!_]*.py")),
                         ids=lambda p: p.stem)
def test_a_layout_imports_the_base_layer_only(path: Path) -> None:
    assert _planner_imports(path) <= set(BASE), path.name


@pytest.mark.parametrize("name", BASE)
def test_the_base_layer_imports_no_layout_or_dispatcher(name: str) -> None:
    assert _planner_imports(MEMORY / f"{name}.py") <= set(BASE), name


def test_phases_follow_the_op_order() -> None:
    peak = inference_peak(make_spec("llama_gqa"), Workload(1, 16, 4), "eager")
    assert [name for name, _ in peak.phases][:3] == ["attention scores", "attention output", "FFN"]
    assert peak.bytes == max(b for _, b in peak.phases)


def test_gelu_kernel_changes_only_a_plain_tanh_gelu() -> None:
    """StarCoder2's one-kernel tanh GELU holds fewer tensors than gelu_new's formula (measured:
    tests/parity/memory_families.py's starcoder2 row); a gated MLP's gate is one kernel anyway."""
    work = Workload(1, 512, 2)

    def ffn(spec_name: str, attention: str, fused: frozenset[str] = frozenset()) -> int:
        return dict(inference_peak(load_spec(spec_name), work, attention, fused).phases)["FFN"]
    kernel = frozenset({"gelu_kernel"})
    for attention in ("sdpa", "eager"):
        assert ffn("starcoder2-3b", attention, kernel) < ffn("starcoder2-3b", attention)
        assert ffn("llama-3.2-1b", attention, kernel) == ffn("llama-3.2-1b", attention)

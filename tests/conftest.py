"""Shared fixtures: a CliRunner that keeps stderr apart, a writer for spec files, torch and
transformers imported when a test asks for them; and the marks: `slow` and `parity` applied by
module (SLOW, _PARITY_IMPORT), so `pytest -m "not slow"` is the edit-test loop."""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from tfcli.cli.app import app

TESTS = Path(__file__).parent
# the modules that dominate the run time (`pytest --durations=0 <folder>` per folder, issue 29),
# relative to tests/, with the time each took on the 2-core machine: each folder keeps its other
# modules in the fast set
SLOW: dict[str, str] = {
    "analysis/depth/test_gradients.py": "30 s: finite differences in every parameter",
    "checkpoints/test_hub_faults.py": "130 s: a local Hub server dripping and cutting bodies",
    "checkpoints/test_hub.py": "8 s",
    "checkpoints/test_heads.py": "4 s",
    "checkpoints/test_tokenizer_faults.py": "4 s",
    "checkpoints/test_hostile_config.py": "4 s",
    "checkpoints/test_hostile_phi3_config.py": "3 s",
    "checkpoints/test_hostile_encoder_config.py": "3 s",
    "cli/test_faults_signals.py": "66 s: signals to a child on a pty",
    "cli/test_hostile_files.py": "46 s",
    "cli/test_faults_writes.py": "21 s",
    "cli/test_trace_cli.py": "19 s",
    "cli/test_output_errors.py": "16 s",
    "cli/test_hostile_args.py": "15 s",
    "cli/test_rot_cli.py": "13 s",
    "cli/test_gemma_cli.py": "12 s",
    "cli/test_strict_integers.py": "11 s",
    "cli/test_run_cli.py": "9 s",
    "cli/test_run_embedding.py": "9 s",
    "cli/test_params_cli.py": "9 s",
    "cli/test_deberta_cli.py": "6 s",
    "cli/test_conventions_cli.py": "5 s",
    "analysis/trace/test_build.py": "29 s",
    "analysis/trace/test_seq2seq.py": "9 s",
    "spec/test_load_fuzz.py": "13 s: hypothesis",
    "engine/test_weights_params.py": "7 s",
    "parity/test_gguf_parity.py": "136 s: gemma-3-270m and SmolLM2 GGUF files",
    "parity/test_generate_parity.py": "7 s",
    "parity/test_parity_generation.py": "7 s: greedy and check-cache of the family table",
    "parity/test_parity_logits.py": "6 s",
    "parity/test_memory_saved.py": "3 s",
    "parity/test_bart_parity.py": "4 s",
    "parity/test_wire_families_parity.py": "4 s",
    "parity/test_real_minilm.py": "3 s",
    "parity/test_encoder_parity.py": "2 s",
    "parity/test_hf_rope_scaling_parity.py": "2 s",
    "parity/test_mt5_parity.py": "2 s",
    "parity/test_phi3_parity.py": "1 s",
    "parity/test_memory_peak.py": "2 s",
}
# a module that compares against torch / transformers imports them (or a parity helper)
_PARITY_IMPORT = re.compile(
    r"^\s*(?:import|from)\s+(?:torch|transformers)\b"
    r"|^\s*from\s+tests\.parity\.(?:greedy|saved_models|meta_totals|torch_memory|memory_cases)\b",
    re.MULTILINE)


@functools.cache
def _imports_torch(path: Path) -> bool:
    return bool(_PARITY_IMPORT.search(path.read_text(encoding="utf-8")))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(item.path)
        relative = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else ""
        if relative in SLOW:
            item.add_marker(pytest.mark.slow)
        if relative.startswith("parity/") or _imports_torch(path) or \
                {"torch", "transformers"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.parity)


@pytest.fixture(scope="session")
def torch() -> ModuleType:
    """torch, imported by the first test that asks, never at collection (a missing one fails)."""
    return importlib.import_module("torch")


@pytest.fixture(scope="session")
def transformers() -> ModuleType:
    """transformers, imported by the first test that asks, never at collection."""
    return importlib.import_module("transformers")


VALID_SPEC = """\
name: tiny
family: decoder
vocab_size: 64
max_seq_len: 32
d_model: 16
n_heads: 4
n_layers: 2
d_ff: 32
"""


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def invoke(runner: CliRunner) -> Callable[..., object]:
    def run(*args: str) -> object:
        return runner.invoke(app, list(args))

    return run


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write

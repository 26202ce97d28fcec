"""Hub ids as SPEC arguments, offline: a Hugging Face cache built in its documented layout
(models--org--name/{refs,snapshots}), a closed local port as an unreachable endpoint, and a
local HTTP server answering as the Hub does for gated, missing and unknown-revision repos. No
test touches the network. Each run is a fresh process: huggingface_hub reads HF_HOME,
HF_HUB_OFFLINE and HF_ENDPOINT once, at import."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.checkpoints.hub_server import HubHandler, serve
from tfcli.checkpoints.configs import repo_of_snapshot
from tfcli.checkpoints.hub import HubRef, parse_hub_id

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TINY = {"vocab_size": 100, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}
TINY_TOTAL = 7_888


def _cache(home: Path, repo: str, weights: bool = False, tags: tuple[str, ...] = ()) -> Path:
    """HF_HOME/hub/models--org--name with refs/main (and tags) -> COMMIT and its snapshot."""
    root = home / "hub" / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (root / "refs").mkdir()
    for ref in ("main", *tags):
        (root / "refs" / ref).write_text(COMMIT)
    if weights:
        import transformers

        transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY)).save_pretrained(snapshot)
    else:
        (snapshot / "config.json").write_text(json.dumps({"model_type": "llama",
                                                          "architectures": ["LlamaForCausalLM"]} | TINY))
    return snapshot


def _tfcli(home: Path, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    environ |= {"HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1"} | env
    return subprocess.run([sys.executable, "-m", "tfcli", *args], capture_output=True, text=True,
                          env=environ, cwd=cwd, timeout=120)


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_parse_hub_id() -> None:
    assert parse_hub_id("openai-community/gpt2") == HubRef("openai-community/gpt2", None)
    assert parse_hub_id("meta-llama/Llama-3.2-1B@v1.0") == HubRef("meta-llama/Llama-3.2-1B", "v1.0")
    for not_an_id in ("gpt2", "a/b/c", "../x", "a/..", "org/name@", "/abs", "a b/c"):
        assert parse_hub_id(not_an_id) is None, not_an_id


def test_repo_of_snapshot(tmp_path: Path) -> None:
    folder = tmp_path / "hub" / "models--org--my-model" / "snapshots" / COMMIT
    assert repo_of_snapshot(folder) == "org/my-model"
    assert repo_of_snapshot(tmp_path) is None


def test_params_reads_the_cache_offline(tmp_path: Path) -> None:
    _cache(tmp_path, "tiny-org/tiny-llama", tags=("v1",))
    for arg in ("tiny-org/tiny-llama", "tiny-org/tiny-llama@v1", f"tiny-org/tiny-llama@{COMMIT}"):
        result = _tfcli(tmp_path, "params", arg, "--format", "json", HF_HUB_OFFLINE="1")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["total"] == TINY_TOTAL and report["spec"] == "tiny-llama"
    result = _tfcli(tmp_path, "import-config", "tiny-org/tiny-llama", HF_HUB_OFFLINE="1")
    assert result.returncode == 0 and "name: tiny-llama" in result.stdout


def test_run_loads_the_cached_checkpoint_offline(tmp_path: Path) -> None:
    _cache(tmp_path, "tiny-org/tiny-llama", weights=True)
    result = _tfcli(tmp_path, "run", "tiny-org/tiny-llama", "--tokens", "1,2,3", "--format", "json",
                    HF_HUB_OFFLINE="1")
    assert result.returncode == 0, result.stderr
    assert COMMIT in json.loads(result.stdout)["weights"]


def test_offline_and_not_cached(tmp_path: Path) -> None:
    _cache(tmp_path, "tiny-org/tiny-llama")
    line = _one_line_error(_tfcli(tmp_path, "params", "tiny-org/other", HF_HUB_OFFLINE="1"))
    assert "not in the local cache" in line and "HF_HUB_OFFLINE=1" in line
    assert "cached snapshots: none" in line
    line = _one_line_error(_tfcli(tmp_path, "params", "tiny-org/tiny-llama@nosuch",
                                  HF_HUB_OFFLINE="1"))
    assert "not in the local cache" in line and COMMIT in line  # what is cached, named


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends


def test_unreachable_endpoint_is_one_line(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    line = _one_line_error(_tfcli(tmp_path, "params", "org/name", HF_ENDPOINT=endpoint))
    assert f"cannot reach the Hub at {endpoint}" in line and "HF_HUB_OFFLINE=1" in line


class _Hub(HubHandler):
    """Answers every request as the Hub answers for a repo named by its first path part."""

    protocol_version = "HTTP/1.0"  # one request per connection, as this server was written

    def answer(self) -> None:
        kind = next((k for k in ("gated", "missing", "revision") if k in self.path), "missing")
        status, code = {"gated": (401, "GatedRepo"), "missing": (404, "RepoNotFound"),
                        "revision": (404, "RevisionNotFound")}[kind]
        body = json.dumps({"error": kind}).encode()
        self.send(status, {"X-Error-Code": code, "Content-Type": "application/json",
                           "Content-Length": str(len(body))}, body)


@pytest.fixture()
def hub_server() -> Iterator[str]:
    server = serve(_Hub)
    yield server.url  # type: ignore[attr-defined]
    server.shutdown()


@pytest.mark.parametrize(("repo", "expected"), [
    ("org/gated-model", "gated: accept its licence at https://huggingface.co/org/gated-model "
                        "and set HF_TOKEN"),
    ("org/missing-model", "no such repository on the Hub"),
    ("org/revision-model@v9", "no revision 'v9' in org/revision-model"),
])
def test_hub_refusals_say_what_to_do(tmp_path: Path, hub_server: str, repo: str,
                                     expected: str) -> None:
    assert expected in _one_line_error(_tfcli(tmp_path, "params", repo, HF_ENDPOINT=hub_server))


def test_a_folder_named_like_a_bundled_spec_does_not_shadow_it(tmp_path: Path) -> None:
    (tmp_path / "gpt2").mkdir()
    result = _tfcli(tmp_path, "params", "gpt2", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0 and json.loads(result.stdout)["total"] == 124_439_808
    assert "directory without config.json" in _one_line_error(
        _tfcli(tmp_path, "params", "./gpt2", cwd=tmp_path))


def test_a_local_folder_wins_over_a_hub_id(tmp_path: Path) -> None:
    local = tmp_path / "org" / "model"
    local.mkdir(parents=True)
    (local / "config.json").write_text(json.dumps({"model_type": "llama"} | TINY))
    result = _tfcli(tmp_path, "params", "org/model", "--format", "json", cwd=tmp_path,
                    HF_ENDPOINT=f"http://127.0.0.1:{_closed_port()}")
    assert result.returncode == 0 and json.loads(result.stdout)["total"] == TINY_TOTAL


def test_without_huggingface_hub_the_message_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['huggingface_hub'] = None\n"
            "from tfcli.cli.app import main; sys.argv = ['tfcli', 'params', 'org/name']; main()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=os.environ | {"HF_HOME": str(tmp_path)}, timeout=60)
    assert result.returncode == 2 and "pip install 'tfcli[hub]'" in result.stderr


# get_safetensors_metadata answered from a local safetensors file: the range requests it makes
# are huggingface_hub's own; what is tested is what tfcli does with the headers it returns.
FAKE_HEADERS = """
import sys
from pathlib import Path
import huggingface_hub
from huggingface_hub.utils._safetensors import (SafetensorsFileMetadata,
                                                SafetensorsRepoMetadata, TensorInfo)
from tfcli.checkpoints.safetensors_header import read_entries

FILE, DROP, REPO = sys.argv[1:4]

def fake(repo_id, revision=None, **_):
    entries = read_entries(Path(FILE))
    drop = DROP
    tensors = {n: TensorInfo(e.dtype, list(e.shape), (0, e.nbytes))
               for n, e in entries.items() if n != drop}
    file = SafetensorsFileMetadata(metadata={}, tensors=tensors)
    return SafetensorsRepoMetadata(metadata=None, sharded=False,
                                   weight_map={n: "model.safetensors" for n in tensors},
                                   files_metadata={"model.safetensors": file})

huggingface_hub.get_safetensors_metadata = fake
from tfcli.cli.app import main
sys.argv = ["tfcli", "params", REPO, "--format", "json"]
main()
"""


@pytest.mark.parametrize("drop", ["", "model.layers.1.mlp.up_proj.weight"])
def test_params_compares_the_hub_headers(transformers: ModuleType, tmp_path: Path,
                                         drop: str) -> None:
    weights = tmp_path / "weights"
    transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY)).save_pretrained(weights)
    _cache(tmp_path, "tiny-org/tiny-llama")  # config.json only: the headers come from the Hub
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    environ |= {"HF_HOME": str(tmp_path), "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}"}
    result = subprocess.run([sys.executable, "-c", FAKE_HEADERS, str(weights / "model.safetensors"),
                             drop, "tiny-org/tiny-llama"], capture_output=True, text=True,
                            env=environ, timeout=120)
    assert result.returncode == 0, result.stderr
    stored = json.loads(result.stdout)["stored_weights"]
    assert stored["format"] == "safetensors on the Hub"
    if drop:
        assert stored["differences"] == [f"missing {drop} [32, 16]"]
    else:
        assert stored["equal"] and stored["parameters"] == TINY_TOTAL


def test_params_offline_has_no_hub_headers(tmp_path: Path) -> None:
    _cache(tmp_path, "tiny-org/tiny-llama")
    result = _tfcli(tmp_path, "params", "tiny-org/tiny-llama", "--format", "json", HF_HUB_OFFLINE="1")
    assert result.returncode == 0 and json.loads(result.stdout)["stored_weights"] is None

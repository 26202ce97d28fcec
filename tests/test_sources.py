"""The SPEC argument, resolved once (tfcli/sources.py): each kind it can name, and each way it
can name nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfcli.core.errors import SpecError
from tfcli.sources import Source, SourceKind, is_model_dir, resolve_checkpoint, resolve_source
from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, write_gguf
from tests.checkpoints.test_configs import GPT2_CONFIG
from tests.conftest import VALID_SPEC


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-gpt2"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(GPT2_CONFIG))
    return folder


def test_a_bundled_name_is_its_packaged_file() -> None:
    source = resolve_source("gpt2")
    assert source.kind is SourceKind.bundled and source.path.endswith("gpt2.yaml")
    assert not source.has_weights
    assert source.load_spec().name == "gpt2"


def test_a_folder_named_like_a_bundled_spec_does_not_shadow_it(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpt2").mkdir()
    assert resolve_source("gpt2").kind is SourceKind.bundled
    with pytest.raises(SpecError, match="directory without config.json"):
        resolve_source("./gpt2")  # the folder, named as a path


def test_a_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(VALID_SPEC)
    source = resolve_source(str(path))
    assert (source.kind, source.path) == (SourceKind.yaml, str(path))
    assert source.load_spec().d_model > 0


def test_a_model_directory_and_its_config(model_dir: Path) -> None:
    folder = resolve_source(str(model_dir))
    assert (folder.kind, folder.path, folder.has_weights) == (SourceKind.model_dir, str(model_dir), True)
    named = resolve_source(str(model_dir / "config.json"))
    assert (named.kind, named.path, named.has_weights) == (SourceKind.config, str(model_dir), False)
    assert named.config_dir == folder.config_dir == str(model_dir)
    assert folder.load_spec() == named.load_spec()
    assert is_model_dir(model_dir) and not is_model_dir(model_dir / "config.json")


def test_a_gguf_file_is_known_by_its_magic_not_its_name(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "weights.bin", "llama", llama_metadata(), llama_tensors())
    source = resolve_source(str(path))
    assert (source.kind, source.path, source.has_weights) == (SourceKind.gguf, str(path), True)
    assert source.load_spec().n_layers == 2


def test_a_hub_id_with_its_revision_is_not_fetched_when_resolved() -> None:
    source = resolve_source("someone/some-model@v1.0")
    assert source.kind is SourceKind.hub and source.path is None
    assert (source.hub.repo, source.hub.revision) == ("someone/some-model", "v1.0")
    assert source.has_weights


@pytest.mark.parametrize(("argument", "says"), [
    ("", "an empty spec name"),
    ("no-such-spec", "no such file, bundled spec or Hub id"),
    ("gpt3", "did you mean"),
])
def test_an_argument_naming_nothing_is_one_spec_error(argument: str, says: str) -> None:
    with pytest.raises(SpecError, match=says):
        resolve_source(argument)


def test_a_broken_symlink_is_named_not_taken_for_a_hub_id(tmp_path: Path) -> None:
    link = tmp_path / "org"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(SpecError, match="symlink to"):
        resolve_source(str(link / "name"))


def test_import_config_reads_a_bundled_name_as_a_folder() -> None:
    """`tfcli import-config gpt2` means the folder ./gpt2: a bundled spec is no checkpoint."""
    source = resolve_checkpoint("gpt2")
    assert (source.kind, source.path) == (SourceKind.model_dir, "gpt2")
    assert resolve_checkpoint("org/name").kind is SourceKind.hub


def test_a_source_is_a_plain_value() -> None:
    assert resolve_source("gpt2") == resolve_source("gpt2")
    assert isinstance(hash(Source("gpt2", SourceKind.bundled, "x")), int)

"""Hugging Face config.json -> Spec: reading the file safely, finding its family, and running
that family's reader (tfcli.checkpoints.families).

Each family merges its config over the defaults of the matching transformers config class
(`Family.defaults`), so a config.json that omits a key means what it means to transformers. Features
tfcli's engine does not model raise BadInputError; the approximations we accept are listed in
the spec's description so they travel into `tfcli import-config` output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from tfcli.checkpoints.families import CLASS_TYPES, CLASSES, FAMILIES, classes_for, multimodal
from tfcli.checkpoints.families.common import architecture_name, unsupported
from tfcli.checkpoints.fields import MAX_SIZE, Config, ConfigFields, int_literal, shown
from tfcli.checkpoints.heads import REFUSED, Architecture
from tfcli.core.errors import BadInputError, SpecConsistencyError, clip
from tfcli.core.files import open_regular
from tfcli.spec.model import Spec
from tfcli.spec.head import CLASSIFIERS, DEFAULT_LABELS
from tfcli.spec.load import did_you_mean

CONFIG_FILE = "config.json"
MAX_CONFIG_BYTES = 16 * 2**20  # the largest real config.json files are tens of KiB
# the defaults of each family's transformers config class, for the keys its reader reads
DEFAULTS: dict[str, Config] = {kind: family.defaults for kind, family in FAMILIES.items()}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted({*FAMILIES, *multimodal.WRAPPERS}))


def model_type(config: Config, file: str = CONFIG_FILE) -> str:
    """The supported family of a config, or a BadInputError naming what it is."""
    c = ConfigFields(config, file)
    architecture = architecture_name(c)
    kind = c.optional_text("model_type") or CLASS_TYPES.get(architecture, "")
    if kind not in FAMILIES and kind not in multimodal.WRAPPERS:
        what = f"model_type {shown(kind)}" if kind else f"architectures {shown(c.names('architectures'))}"
        # the closest supported type, not all 50: the list is SUPPORTED_MODEL_TYPES and
        # docs/families.md (with the classes of each)
        close = did_you_mean(kind, SUPPORTED_MODEL_TYPES) if kind else ""
        raise BadInputError(f"{file}: {what} is not supported{close} (tfcli reads "
                            f"{len(SUPPORTED_MODEL_TYPES)} model types: docs/families.md)")
    return kind


def architecture(c: ConfigFields, kind: str) -> Architecture:
    """What the config's (first) `architectures` class is to tfcli, or a BadInputError naming
    a class tfcli does not build: counting it as its family's LM would count another model."""
    name, classes = architecture_name(c), classes_for(kind)
    if not name:
        return next(iter(classes.values()))
    if name in classes:
        return classes[name]
    reason = REFUSED.get(name, "a model class tfcli does not build")
    raise BadInputError(f"{c.file}: architectures {shown(name)} is not supported: {reason} "
                        f"(supported for model_type '{kind}': {', '.join(CLASSES[kind])})")


def num_labels(c: ConfigFields) -> int:
    """A config's label count as transformers reads it: num_labels, else the size of id2label
    (what save_pretrained writes), else 2 (PretrainedConfig's default)."""
    given = c.optional_integer("num_labels")  # null: derived, as transformers derives it
    if given is not None:
        return given
    labels = c.section("id2label").values
    return len(labels) if labels else DEFAULT_LABELS


def head_fields(c: ConfigFields, arch: Architecture, fields: Config,
                notes: list[str]) -> Config:
    """The spec fields of the class's task head (spec.head); lm_head is then derived from it.
    A decoder's sequence classifier reads the last token that is not pad_token_id."""
    if not arch.head:
        return {}
    fields.pop("lm_head", None)
    head: Config = {"head": arch.head}
    if arch.head in CLASSIFIERS:
        head["num_labels"] = arch.labels or num_labels(c)
    if arch.classifier_dense:  # its activation: the body's (ELECTRA's hidden_act)
        head["classifier_dense"] = True
    if arch.head == "sequence_classification" and fields.get("family") == "decoder":
        head |= _pad_token(c, fields, notes)
    return head


def _pad_token(c: ConfigFields, fields: Config, notes: list[str]) -> Config:
    """pad_token_id for a decoder's classifier; one outside the vocabulary (-1 in some LLaMA
    configs) matches no token, so transformers reads every row's last position: the spec then
    reads the last token the attention mask keeps, the same for unpadded rows."""
    pad = c.optional_integer("pad_token_id", minimum=-MAX_SIZE)
    if pad is None:
        return {}
    if 0 <= pad < fields["vocab_size"]:
        return {"pad_token_id": pad}
    notes.append(f"pad_token_id {pad} is no token: each row is read at its last real token "
                 "(transformers: its last position, the same unless padded)")
    return {}


def _spec_name(name_or_path: str | None, source: str, kind: str) -> str:
    """The spec's name: the last part of `_name_or_path` when it is a plain short name (it is
    shown in every table), else of `source`, else the family."""
    for candidate in (name_or_path, source):
        name = Path(candidate or "").name
        if name and len(name) <= 100 and name.isprintable():
            return name
    return kind


def spec_from_config(config: Config, source: str, *, file: str = CONFIG_FILE) -> Spec:
    """A Spec for a Hugging Face config.json mapping; `source` is where it came from and `file`
    the config file that error messages name."""
    kind = model_type(config, file)
    if kind in multimodal.WRAPPERS:
        return _language_model(config, source, file, kind)
    # the resolved kind is stored back so a config named only by `architectures` reads as its
    # family everywhere (messages, the mixtral expert fields)
    c = ConfigFields(DEFAULTS[kind] | config | {"model_type": kind}, file)
    arch = architecture(c, kind)
    fields, notes = FAMILIES[kind].read(c, arch)
    name = _spec_name(c.optional_text("_name_or_path"), source, kind)
    arch_name = architecture_name(c) or kind
    fields |= head_fields(c, arch, fields, notes)
    description = f"{arch_name} imported from config.json" + "".join(f"; {n}" for n in notes)
    try:
        return Spec.model_validate({"name": name, "description": description, "source": source} | fields)
    except SpecConsistencyError as exc:
        raise unsupported(c, f"gives an inconsistent spec: {exc.message}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise unsupported(c, f"gives an invalid spec: {problems}") from None


def _language_model(config: Config, source: str, file: str, kind: str) -> Spec:
    """A vision-language wrapper's language model (its text_config), the towers named as not
    counted in the description that params' notes and JSON carry."""
    c = ConfigFields(config | {"model_type": kind}, file)
    name = architecture_name(c)
    classes = multimodal.CLASSES[kind]
    if name and name not in classes:
        raise BadInputError(f"{file}: architectures {shown(name)} is not supported (supported "
                            f"for model_type '{kind}': {', '.join(classes)})")
    wrapper = multimodal.WRAPPERS[kind]
    spec = spec_from_config(multimodal.text_config(config, kind), source,
                            file=f"{file} text_config")
    notes = spec.description.split("imported from config.json", 1)[1]
    outer = name or next(iter(classes))
    # Qwen2.5-VL has no causal-LM class of its own: its model.language_model and lm_head
    counted = ("and head" if wrapper.lm_class == outer else f"({wrapper.lm_class})")
    description = (f"{outer} imported from config.json: its language model {counted} only, "
                   f"{wrapper.uncounted} not counted{notes}")
    return spec.replace(name=_spec_name(c.optional_text("_name_or_path"), source, kind),
                        description=description)


def config_file(path: str | Path) -> Path:
    """The config.json of a model directory, or `path` itself when it names the file. An empty
    name is refused (Path('') is the current folder), as is a path the system cannot look at
    (too long, a parent not searchable): pathlib's is_dir() raises for those."""
    if isinstance(path, str) and not path:
        raise BadInputError("the model directory's name is empty: give a folder with config.json")
    folder = Path(path)
    try:
        return folder / CONFIG_FILE if folder.is_dir() else folder
    except OSError as exc:
        raise BadInputError(f"{clip(str(path))}: cannot be read ({exc.strerror or exc})") from None


class _DuplicateKey(ValueError):
    """A key given twice in one JSON object: json.loads would keep the last one silently."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"key {shown(key)} appears twice in one object")
        result[key] = value
    return result


def read_bounded(file: Path, limit: int, what: str = "a config file") -> bytes:
    """At most `limit` bytes of a regular file; a FIFO, device or directory is refused before
    anything is read (/dev/zero never ends, a FIFO may never answer). O_NONBLOCK keeps open()
    itself from waiting on a FIFO; fstat checks the file actually opened (tfcli.core.files)."""
    with os.fdopen(open_regular(file), "rb") as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise BadInputError(f"{file}: cannot be read ({exc.strerror})") from None
    if len(data) > limit:
        raise BadInputError(f"{file}: larger than {limit // 2**20} MiB, too large for {what}")
    return data


def strict_json(data: bytes) -> object:
    """Strict JSON: UTF-8, no duplicate keys, integer literals kept bounded (fields.int_literal).
    Every failure is a ValueError with a short message (UnicodeDecodeError is one)."""
    try:
        return json.loads(data.decode("utf-8-sig"), object_pairs_hook=_unique_keys,
                          parse_int=int_literal)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def parse_json(data: bytes, file: str | Path) -> object:
    """strict_json, its failures one BadInputError naming `file`."""
    try:
        return strict_json(data)
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:  # json.JSONDecodeError, _DuplicateKey, nesting
        raise BadInputError(f"{file}: cannot be read as JSON: {exc}") from None


def config_from_bytes(data: bytes, file: str | Path) -> Config:
    """The JSON object a config file's bytes hold, or a BadInputError naming `file`."""
    config = parse_json(data, file)
    if not isinstance(config, dict):
        raise BadInputError(f"{file}: must hold a JSON object, got {type(config).__name__}")
    return config


def read_config(path: str | Path) -> Config:
    """The parsed config.json of a model directory (or the file itself)."""
    file = config_file(path)
    if not file.exists():
        raise BadInputError(f"{clip(str(path))}: no config.json (expected a Hugging Face model "
                            "directory)")
    return config_from_bytes(read_bounded(file, MAX_CONFIG_BYTES), file)


def repo_of_snapshot(folder: Path) -> str | None:
    """`org/name` when `folder` is a snapshot of the Hub cache (models--org--name/snapshots/x)."""
    parts = folder.resolve().parts if folder.exists() else folder.parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3].removeprefix("models--").replace("--", "/", 1)
    return None


def spec_from_config_dir(path: str | Path) -> Spec:
    """The Spec of a Hugging Face model directory, from its config.json (or given that file:
    the spec is still named after the directory)."""
    file = config_file(path)
    # a snapshot of the Hub cache is named for its repository, not its commit folder
    source = repo_of_snapshot(file.parent) or str(file.parent)
    return spec_from_config(read_config(path), source=source, file=str(file))

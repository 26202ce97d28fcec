"""Spec -> a minimal YAML document (for `tfcli import-config DIR > spec.yaml`)."""

from __future__ import annotations

from typing import Any

import yaml

from tfcli.core.errors import TfcliError
from tfcli.spec.model import FIELD_NAMES, Spec

ALWAYS = ("name", "family")  # written even when they equal a default


def minimal_fields(spec: Spec) -> dict[str, Any]:
    """The fields of `spec` that a YAML file must state: dropping any other one would change
    the validated Spec (derived fields such as n_kv_heads or d_head re-derive to the same value)."""
    data = spec.model_dump()
    for field, value in data.items():  # a nested model (rope_scaling): only the values it sets
        if isinstance(value, dict):
            data[field] = {k: v for k, v in value.items() if v is not None}
    for field in FIELD_NAMES:
        if field in ALWAYS or Spec.model_fields[field].is_required():
            continue
        trial = {k: v for k, v in data.items() if k != field}
        if _validates_to(trial, spec):
            data = trial
    return data


def _validates_to(data: dict[str, Any], spec: Spec) -> bool:
    try:
        return Spec.model_validate(data) == spec
    except (ValueError, TfcliError):  # pydantic's ValidationError is a ValueError
        return False


def spec_to_yaml(spec: Spec, source: str | None = None) -> str:
    """A YAML document for `spec` holding only non-default fields, headed `# generated from ...`.

    It round-trips: tfcli.spec.load.parse_spec_text(spec_to_yaml(spec)) == spec.
    """
    origin = source or spec.source or spec.name
    body = yaml.safe_dump(minimal_fields(spec), sort_keys=False, allow_unicode=True, width=100)
    return f"# generated from {origin}\n{body}"

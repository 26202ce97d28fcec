"""Published configs at full size, one row each (tests/parity/totals_table.py), against
transformers on the meta device (tests/parity/meta_totals.py), without allocating a weight.

Kinds of check, each over the rows it applies to: tfcli's total from the imported config equals
transformers' num_parameters() of the class in `architectures` and the published figure; what
import-config writes reads back as the same spec; the reader sets the fields the row names;
import-config reproduces the bundled spec field for field, which round-trips through YAML; and
what tfcli does not model is refused by name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.parity.meta_totals import hf_total
from tests.parity.totals_table import FAMILIES, REFUSED, Row
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec
from tfcli.spec.model import Spec

IDENTITY = {"name", "description", "source"}


def _rows(*, when: str) -> list[pytest.param]:
    return [pytest.param(row, id=row.id) for row in FAMILIES if getattr(row, when)]


def _architecture(spec: Spec) -> dict[str, object]:
    return spec.model_dump(exclude=IDENTITY)


@pytest.mark.parametrize("row", _rows(when="counted"))
def test_total_equals_transformers_on_meta_device(row: Row) -> None:
    config = row.built()
    spec = spec_from_config(config, source=row.id)
    assert total_parameters(spec) == hf_total(config)
    assert row.total is None or total_parameters(spec) == row.total
    again = parse_spec_text(spec_to_yaml(spec))  # what import-config writes
    assert again == spec


@pytest.mark.parametrize("row", _rows(when="reads"))
def test_the_reader_sets_the_fields(row: Row) -> None:
    spec = spec_from_config(row.built(), source=row.id)
    assert {k: getattr(spec, k) for k in row.reads} == row.reads


@pytest.mark.parametrize("row", _rows(when="bundled"))
def test_import_reproduces_the_bundled_spec(row: Row) -> None:
    imported = spec_from_config(row.built(), source=row.id)
    bundled = load_spec(str(row.bundled))
    assert _architecture(imported) == _architecture(bundled)
    assert total_parameters(bundled) == total_parameters(imported)
    assert row.total is None or total_parameters(bundled) == row.total
    assert row.source is None or re.match(row.source, bundled.source), bundled.source


@pytest.mark.parametrize("name", sorted({str(row.bundled) for row in FAMILIES if row.bundled}))
def test_bundled_spec_round_trips_through_yaml(name: str, tmp_path: Path) -> None:
    spec = load_spec(name)
    assert parse_spec_text(spec_to_yaml(spec)) == spec
    file = tmp_path / f"{name}.yaml"
    file.write_text(spec_to_yaml(spec))
    assert load_spec(str(file)) == spec


@pytest.mark.parametrize(("base", "changes", "named"),
                         [pytest.param(*case[1:], id=case[0]) for case in REFUSED])
def test_unmodelled_keys_are_refused_by_name(base: dict[str, object], changes: dict[str, object],
                                             named: str) -> None:
    with pytest.raises(BadInputError, match=named):
        spec_from_config(dict(base) | dict(changes), source="x")

"""The bundled-spec catalogue (`tfcli specs`) and batch validation (`tfcli validate`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfcli.core.errors import TfcliError
from tfcli.spec.counts import total_parameters
from tfcli.spec.model import Spec
from tfcli.spec.load import bundled_spec_names
from tfcli.sources import load_spec


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    family: str
    layers: str  # "12" or "6+6" for encoder-decoder
    d_model: int
    total: int
    description: str

    @classmethod
    def of(cls, spec: Spec) -> CatalogEntry:
        layers = (f"{spec.encoder_layers}+{spec.decoder_layers}"
                  if spec.family == "encoder-decoder" else str(spec.n_layers))
        return cls(spec.name, spec.family, layers, spec.d_model, total_parameters(spec),
                   spec.description)


@dataclass(frozen=True)
class Catalog:
    entries: list[CatalogEntry]

    def to_dict(self) -> dict[str, Any]:
        return {"specs": [e.__dict__ for e in self.entries]}

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        header = ["name", "family", "layers", "d_model", "total", "description"]
        return header, [[getattr(e, h) for h in header] for e in self.entries]


def build_catalog() -> Catalog:
    return Catalog([CatalogEntry.of(load_spec(name)) for name in bundled_spec_names()])


@dataclass(frozen=True)
class Validation:
    source: str
    error: str | None  # None when the spec is valid
    entry: CatalogEntry | None


@dataclass(frozen=True)
class ValidationReport:
    results: list[Validation]

    @property
    def ok(self) -> bool:
        return all(r.error is None for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "results": [
                {"source": r.source, "ok": r.error is None, "error": r.error,
                 "name": r.entry.name if r.entry else None,
                 "total": r.entry.total if r.entry else None}
                for r in self.results
            ],
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        return ["source", "ok", "error"], [
            [r.source, r.error is None, r.error or ""] for r in self.results
        ]


def validate_specs(sources: list[str]) -> ValidationReport:
    results = []
    for source in sources:
        try:
            results.append(Validation(source, None, CatalogEntry.of(load_spec(source))))
        except TfcliError as exc:
            results.append(Validation(source, exc.message, None))
    return ValidationReport(results)

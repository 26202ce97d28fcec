"""The float32 parity errors of the decoder families' rows (tests/parity/parity_families.py)
against transformers: each row's tiny random model saved as the tests save it, tfcli's logits
of the padded batch against transformers' on the real positions, max abs error and the largest
logit beside it. Not timed. Run: python benchmarks/family_parity_errors.py [ROW...]"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's tests/ helpers

from tests.parity.parity_families import FAMILIES, right_padded, tokens  # noqa: E402
from tests.parity.saved_models import real_logits, save_random  # noqa: E402


def row_error(name: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        model = save_random(FAMILIES[name].build, Path(folder), std=0.15)
        mask, _ = right_padded()
        got, want = real_logits(model, Path(folder), tokens(), mask)
    return float(np.abs(got - want).max()), float(np.abs(want).max())


def main(names: list[str]) -> None:
    print(f"{'row':24} {'max |err|':>10} {'max |logit|':>12}")
    for name in names or list(FAMILIES):
        error, scale = row_error(name)
        print(f"{name:24} {error:10.2e} {scale:12.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])

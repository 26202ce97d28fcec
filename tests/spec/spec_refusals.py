"""One check the spec-field tests share: a spec whose field is refused gives one clear line
naming the field (exit 2, no traceback) through `tfcli params`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def assert_field_refused(invoke: Callable[..., Any], write_spec: Callable[[str], Path],
                         text: str, field: str, message: str) -> None:
    """`text` (YAML lines; a later key wins over an earlier one) refused, naming `field`."""
    lines = dict(line.split(":", 1) for line in text.splitlines())
    path = write_spec("\n".join(f"{k}:{v}" for k, v in lines.items()) + "\n")
    result = invoke("params", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"'{field}'" in result.stderr and message in result.stderr, result.stderr

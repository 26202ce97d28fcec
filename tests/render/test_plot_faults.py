"""Issue 28.4: matplotlib failing at use time (a broken install, a font or backend error inside
savefig) was an internal error (exit 70) with a half-drawn chart; through tfcli.core.deps it is one
line naming the --plot file, and nothing is left at the target, on both --plot surfaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.guarded import run_in_memory

PLOTS = {  # every command with --plot, with arguments that keep it small
    "depth-sweep": ("depth-sweep", "lesson-tiny", "--depths", "1,2", "--seq-len", "4", "-q"),
    "perf sweep": ("perf", "gpt2", "--gpu", "a100-80gb", "--seq-len", "128,1024"),
    "memory sweep": ("memory", "gpt2", "--seq-len", "128,1024"),
}


class _Broken(RuntimeError):
    pass


@pytest.mark.parametrize("where", ["savefig", "add_subplot"])
@pytest.mark.parametrize("command", list(PLOTS))
def test_matplotlib_failing_midway_is_one_line_naming_the_file(
        command: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    def broken(*args: object, **kwargs: object) -> None:
        raise _Broken("findfont: Font family 'DejaVu Sans' not found\nsecond line")

    monkeypatch.setattr(Figure, where, broken)
    target = tmp_path / "chart.png"
    code, out, err = run_in_memory(*PLOTS[command], "--plot", str(target))
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith(f"tfcli: error: {target}: matplotlib failed "
                                                   "drawing the --plot chart: _Broken: findfont"), err
    assert "second line" not in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no chart, no temporary file


@pytest.mark.parametrize("command", list(PLOTS))
def test_a_matplotlib_that_fails_to_import_is_refused_before_the_work(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    real = importlib.import_module

    def failing(name: str, *args: object) -> object:
        if name.startswith("matplotlib"):
            raise OSError("libfreetype.so.6: cannot open shared object file")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", failing)
    code, out, err = run_in_memory(*PLOTS[command], "--plot", str(tmp_path / "c.png"))
    assert code == 2 and out == "", err
    assert err.startswith("tfcli: error: the `matplotlib` package is installed but fails to "
                          "import (OSError: libfreetype.so.6"), err

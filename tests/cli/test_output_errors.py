"""Output that cannot be written: result files (--save-npz, --plot) go only to a regular file or
a new path, atomically; a stdout or stderr that is full or closed gives exit 74 and one line,
whatever the buffering; a reader that leaves (`| head -1`) is a quiet exit 0."""

from __future__ import annotations

import errno
import io
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from tfcli.cli.app import app
from tfcli.core.errors import BadInputError, OutputError
from tfcli.core.files import check_output_file, write_atomically
from tfcli.render.output import OutputFormat

TOKENS = ["--tokens", "1,2,3"]


def _one_error_line(stderr: str, *needles: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfcli: error: "), stderr
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in lines[0], (needle, stderr)


# --- result files -------------------------------------------------------------------------------


def _refused(invoke, target: Path | str, *needles: str) -> None:
    """--save-npz at `target` is refused before the forward pass (nothing on stdout)."""
    result = invoke("run", "lesson-tiny", *TOKENS, "--save-npz", str(target))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    _one_error_line(result.stderr, "--save-npz", *needles)


def test_a_symlink_is_refused_and_left_pointing_where_it_did(invoke, tmp_path: Path) -> None:
    real = tmp_path / "real.npz"
    real.write_bytes(b"precious")
    link = tmp_path / "link.npz"
    link.symlink_to(real)
    _refused(invoke, link, "symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == b"precious"
    dangling = tmp_path / "dangling.npz"
    dangling.symlink_to(tmp_path / "nowhere")
    _refused(invoke, dangling, "symbolic link")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.npz", "link.npz", "real.npz"]


def test_a_fifo_and_a_device_are_refused_not_replaced(invoke, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    _refused(invoke, fifo, "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    _refused(invoke, os.devnull, "character device")
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)


def test_folders_and_impossible_names_are_one_line_each(invoke, tmp_path: Path) -> None:
    long_name = "n" * 300 + ".npz"  # over NAME_MAX (255) on every common file system
    _refused(invoke, tmp_path / long_name, "File name too long", "…")
    _refused(invoke, tmp_path, "is a folder")
    _refused(invoke, tmp_path / "missing" / "x.npz", "does not exist")
    (tmp_path / "file").write_text("x")
    _refused(invoke, tmp_path / "file" / "x.npz", "Not a directory")
    result = invoke("run", "lesson-tiny", *TOKENS, "--save-npz", str(tmp_path / long_name))
    assert len(result.stderr) < 300  # the name is cut, not echoed whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_unwritable_folders_and_read_only_files(invoke, tmp_path: Path, monkeypatch) -> None:
    """os.access answers for permissions and for read-only file systems alike (the tests may
    run as root, which permissions do not stop, so the answer is patched)."""
    old = tmp_path / "old.npz"
    old.write_bytes(b"old")
    monkeypatch.setattr("tfcli.core.files.os.access", lambda path, mode: Path(path) != old)
    _refused(invoke, old, "read-only")
    monkeypatch.setattr("tfcli.core.files.os.access", lambda path, mode: False)
    _refused(invoke, tmp_path / "new.npz", "is not writable")
    assert old.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["old.npz"]


def test_a_regular_file_is_replaced_atomically(invoke, tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    out.write_bytes(b"old")
    result = invoke("run", "lesson-tiny", *TOKENS, "--save-npz", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:2] == b"PK"  # a zip archive now
    assert [p.name for p in tmp_path.iterdir()] == ["o.npz"]


def test_plot_refuses_a_suffix_it_would_not_honour(invoke, tmp_path: Path) -> None:
    """The chart is PNG; x.jpg would get PNG bytes under a JPEG name, so it is refused."""
    base = ["depth-sweep", "--sublayer", "linear", "--depths", "2", "-q"]
    for name in ("chart.jpg", "chart.svg", "chart"):
        result = invoke(*base, "--plot", str(tmp_path / name))
        assert result.exit_code == 2 and result.stdout == ""
        _one_error_line(result.stderr, "--plot", ".png")
    result = invoke(*base, "--plot", str(tmp_path / "chart.PNG"), "-f", "json")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "chart.PNG").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    link = tmp_path / "link.png"
    link.symlink_to(tmp_path / "chart.PNG")
    result = invoke(*base, "--plot", str(link))
    assert result.exit_code == 2 and link.is_symlink()
    _one_error_line(result.stderr, "--plot", "symbolic link")


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "x.bin"

    def disk_full(handle: io.BufferedWriter) -> None:
        handle.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError, match="cannot write .*No space left"):
        write_atomically(target, "--out", disk_full)
    for stop in (KeyboardInterrupt, MemoryError):
        def interrupted(handle: io.BufferedWriter, stop: type[BaseException] = stop) -> None:
            handle.write(b"half")
            raise stop()

        with pytest.raises(stop):
            write_atomically(target, "--out", interrupted)
    assert list(tmp_path.iterdir()) == []


def test_a_target_that_changes_during_the_work_is_refused(tmp_path: Path) -> None:
    """Checked before the work and again just before the rename."""
    target = tmp_path / "x.bin"
    elsewhere = tmp_path / "elsewhere"

    def swap_in_a_link(handle: io.BufferedWriter) -> None:
        handle.write(b"data")
        target.symlink_to(elsewhere)

    with pytest.raises(BadInputError, match="symbolic link"):
        write_atomically(target, "--out", swap_in_a_link)
    assert target.is_symlink() and [p.name for p in tmp_path.iterdir()] == ["x.bin"]


def test_check_output_file_accepts_new_and_regular_paths(tmp_path: Path) -> None:
    assert check_output_file(str(tmp_path / "new.npz"), "--o") == tmp_path / "new.npz"
    (tmp_path / "old.png").write_bytes(b"")
    assert check_output_file(str(tmp_path / "old.png"), "--o", suffix=".png").name == "old.png"
    for bad in ("", "   "):
        with pytest.raises(BadInputError, match="needs a file name"):
            check_output_file(bad, "--o")


# --- stdout and stderr, in process: every command, buffered and unbuffered ---------------------


class _FullDisk(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def _full_stdout(unbuffered: bool) -> io.TextIOWrapper:
    raw = _FullDisk()
    if unbuffered:  # as under PYTHONUNBUFFERED=1: every write reaches the disk at once
        return io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8")


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "tiny"
    path.mkdir()
    (path / "config.json").write_text(
        '{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 300, '
        '"n_positions": 64, "n_embd": 32, "n_head": 4, "n_layer": 2}')
    return path


def command_args(config_dir: Path) -> dict[str, list[str]]:
    """Small, valid arguments for every command (a new command must be added here)."""
    return {
        "params": ["gpt2"], "specs": [], "validate": ["gpt2"], "schema": [],
        "import-config": [str(config_dir)], "run": ["lesson-tiny", *TOKENS],
        "generate": ["lesson-tiny", *TOKENS, "--max-new-tokens", "2"],
        "trace": ["lesson-tiny", "--seq-len", "4"],
        "depth-sweep": ["--sublayer", "linear", "--depths", "2", "-q"],
        "diff": ["lesson-tiny", "gpt2", "--seq-len", "4"], "gpus": [],
        "perf": ["lesson-tiny", "--gpu", "h100", "--seq-len", "4"],
        "memory": ["lesson-tiny", "--seq-len", "4"],
    }


def _run_main(args: list[str], stdout: io.TextIOBase, monkeypatch,
              stderr: io.TextIOBase | None = None) -> tuple[int, str]:
    """The app's own main (the guard included) on the given streams; (exit code, stderr)."""
    stderr = io.StringIO() if stderr is None else stderr
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    code = typer.main.get_command(app).main(args, prog_name="tfcli", standalone_mode=False)
    return code, stderr.getvalue() if isinstance(stderr, io.StringIO) else ""


def test_every_command_on_a_full_disk_is_exit_74_and_one_line(config_dir: Path,
                                                              monkeypatch) -> None:
    commands = command_args(config_dir)
    assert set(commands) == set(typer.main.get_command(app).commands)
    for name, args in commands.items():
        for extra, bufferings in (([], (False, True)), (["--help"], (False,))):
            for unbuffered in bufferings:
                code, stderr = _run_main([name, *args, *extra], _full_stdout(unbuffered),
                                         monkeypatch)
                assert code == 74, (name, extra, unbuffered, stderr)
                _one_error_line(stderr, "cannot write the output", "No space left")
    for args in (["--version"], ["--help"]):
        code, stderr = _run_main(args, _full_stdout(False), monkeypatch)
        assert code == 74
        _one_error_line(stderr, "cannot write the output")


def test_every_command_with_a_working_stdout_still_exits_0(config_dir: Path,
                                                          monkeypatch) -> None:
    """The guard must not turn success into failure (the counterpart of the test above), and a
    full stderr (progress bars and notes write there) costs no command its result."""
    for name, args in command_args(config_dir).items():
        out = io.StringIO()
        code, stderr = _run_main([name, *args], out, monkeypatch)
        assert code == 0 and out.getvalue() and stderr == "", (name, stderr)
        for extra in ([], ["--format", "json"]) if name in ("generate", "depth-sweep") else ([],):
            out = io.StringIO()
            full = _full_stdout(unbuffered=True)
            code, _ = _run_main([name, *args, *extra], out, monkeypatch, stderr=full)
            assert code == 0 and out.getvalue(), (name, extra)


# --- stdout and stderr, as the shell gives them: real file descriptors -------------------------


def _shell(args: list[str], redirect: str = "", env: dict[str, str] | None = None,
           pipe_to: str | None = None) -> subprocess.Popen[str]:
    """Start `python -m tfcli ARGS REDIRECT` in a shell, which can close descriptors (>&-)."""
    command = " ".join([sys.executable, "-m", "tfcli", *map(shlex.quote, args), redirect])
    if pipe_to:
        command = f"{command} | {pipe_to}; exit ${{PIPESTATUS[0]}}"
    return subprocess.Popen(["bash", "-c", command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def test_dev_full_and_closed_stdout(config_dir: Path) -> None:
    cases = [
        (["specs"], ">/dev/full", {}), (["--version"], ">/dev/full", {}),
        (["schema"], ">/dev/full", {}),
        (["params", "gpt2"], ">/dev/full", {"PYTHONUNBUFFERED": "1"}),
        (["import-config", str(config_dir)], ">/dev/full", {"PYTHONUNBUFFERED": "1"}),
        (["specs"], ">&-", {}),
    ]
    started = [_shell(args, redirect, env) for args, redirect, env in cases]
    for (args, redirect, _), process in zip(cases, started):
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 74, (args, redirect, stderr)
        _one_error_line(stderr, "cannot write the output")
        assert "Exception ignored" not in stderr


def test_a_full_or_closed_stderr_and_a_reader_that_leaves() -> None:
    """A broken stderr keeps the exit code (an error's 2, a success's 0); `| head -1` on ~80 KB of CSV (more than a pipe
    holds, so a write after head has gone fails) is a quiet 0, for every format."""
    generate = ["generate", "lesson-tiny", "--tokens", "1", "--max-new-tokens", "2"]
    started = [_shell(["params", "nope"], "2>/dev/full"), _shell(["params", "nope"], "2>&-"),
               _shell(generate, "2>/dev/full"),  # its live display writes to stderr
               *(_shell(["trace", "llama-2-70b", "--seq-len", "8", "-f", fmt.value],
                        pipe_to="head -1") for fmt in OutputFormat)]
    (full, closed, live, *piped) = [(p.communicate(timeout=120), p.returncode) for p in started]
    assert full == (("", ""), 2) and closed == (("", ""), 2)
    assert live[1] == 0 and "new tokens" in live[0][0], live
    for fmt, ((stdout, stderr), code) in zip(OutputFormat, piped):
        assert code == 0 and stdout.strip() and stderr == "", (fmt, code, stderr)
    assert piped[list(OutputFormat).index(OutputFormat.csv)][0][0].startswith("path,op,")

"""Issue 28.2: a write the disk cuts short is exit 74 and one line, never exit 0 with a truncated
file - for every command that writes, every format, buffered and PYTHONUNBUFFERED=1.

A full disk is RLIMIT_FSIZE (with SIGXFSZ ignored): past the limit a write is cut short, then
the next one fails with EFBIG - exactly what a disk that fills up does (ENOSPC). It needs no
privileges, so it runs in CI; a real small tmpfs is used too where `mount` works (root).
Python's stdout took the short count as success (BufferedWriter returns it, TextIOWrapper ignores
it); the guard now writes stdout through tfcli.core.files.CompleteWriter.

One child process per command runs its rows in process (each format, with stdout rebuilt as
Python builds it, buffered or under PYTHONUNBUFFERED), against a file limited to half the size
of that row's complete output; a few whole-process rows check the real `python -m tfcli`.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ("table", "json", "csv", "markdown")
TINY = ["lesson-tiny", "--tokens", "1,2,3"]
WITH_FORMATS = {  # every command that writes a result in the four formats
    "params": ["params", "gpt2"], "trace": ["trace", "gpt2"], "run": ["run", *TINY],
    "generate": ["generate", *TINY, "--max-new-tokens", "8"],
    "specs": ["specs"], "validate": ["validate", "specs/gpt2.yaml", "specs/bert-base.yaml"],
    "diff": ["diff", "gpt2", "gpt2-medium"], "gpus": ["gpus"],
    "perf": ["perf", "gpt2", "--gpu", "a100-80gb"], "memory": ["memory", "gpt2"],
    "depth-sweep": ["depth-sweep", "--depths", "1,2", "--seq-len", "8", "-q"],
}
TEXT_ONLY = {"schema": ["schema"], "import-config": ["import-config", "{config}"],
             "specs-yaml": ["specs", "gpt2"]}

CHILD = textwrap.dedent('''
    import gc, io, json, os, resource, signal, sys
    import typer
    from tfcli.cli.app import app
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a short write, then EFBIG
    group = typer.main.get_command(app)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

    def once(argv, unbuffered, path, limit):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.close(fd)
        raw = io.FileIO(1, "w", closefd=False)
        # as Python makes stdout: a raw file under a write-through text layer with -u
        sys.stdout = (io.TextIOWrapper(raw, encoding="utf-8", write_through=True) if unbuffered
                      else io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8"))
        sys.stderr = err = io.StringIO()
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
        try:
            code = group.main(argv, prog_name="tfcli", standalone_mode=False)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            sys.stderr = sys.__stderr__
            gc.collect()  # the run's stdout objects flush what they hold into this row's fd 1
        return code, err.getvalue(), os.path.getsize(path)

    results = []
    for argv, unbuffered, path in json.loads(sys.argv[1]):
        code, err, size = once(argv, unbuffered, path, soft)
        assert code == 0, (argv, err)
        results.append([size, *once(argv, unbuffered, path, max(size // 2, 1))])
    os.write(2, ("RESULTS " + json.dumps(results) + "\\n").encode())
''')


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("config")
    (folder / "config.json").write_text(json.dumps({
        "model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 2, "vocab_size": 100,
        "n_positions": 64}))
    return folder


def _rows(name: str, config: Path) -> list[list[str]]:
    if name in WITH_FORMATS:
        return [[*WITH_FORMATS[name], "-f", fmt] for fmt in FORMATS]
    return [[str(config) if arg == "{config}" else arg for arg in TEXT_ONLY[name]]]


def _one_output_error(stderr: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("tfcli: error: cannot write the output"), stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr


@pytest.mark.parametrize("name", [*WITH_FORMATS, *TEXT_ONLY])
def test_a_full_disk_is_exit_74_in_every_format_and_buffering(name: str, tmp_path: Path,
                                                              config_dir: Path) -> None:
    rows = [[argv, unbuffered, str(tmp_path / f"out-{i}-{int(unbuffered)}")]
            for i, argv in enumerate(_rows(name, config_dir)) for unbuffered in (False, True)]
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(rows)], cwd=ROOT,
                           env=os.environ | NO_PYC | {"PYTHONPATH": str(ROOT), "COLUMNS": "120"},
                           capture_output=True, text=True, timeout=300)
    line = next((x for x in child.stderr.splitlines() if x.startswith("RESULTS ")), None)
    assert child.returncode == 0 and line, child.stderr[-2000:]
    for (argv, unbuffered, _), (size, code, err, written) in zip(rows, json.loads(line[8:])):
        where = f"{' '.join(argv)} {'PYTHONUNBUFFERED' if unbuffered else 'buffered'}"
        assert code == 74, f"{where}: exit {code}, {written} of {size} bytes, {err!r}"
        _one_output_error(err)


# The children never write bytecode: under RLIMIT_FSIZE Python's own .pyc writer truncates the
# files it caches (it ignores the short count too), breaking later imports for everyone.
NO_PYC = {"PYTHONDONTWRITEBYTECODE": "1"}


# --- whole processes: the real stdout Python builds, and result files ------------------------


def _limited(size: int):
    def limits() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limits


def _tfcli(argv: list[str], stdout: Path, env: dict[str, str], fsize: int | None
           ) -> subprocess.CompletedProcess[str]:
    with stdout.open("wb") as out:
        return subprocess.run([sys.executable, "-m", "tfcli", *argv], cwd=ROOT, stdout=out,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env=os.environ | NO_PYC | {"PYTHONPATH": str(ROOT)} | env,
                              preexec_fn=_limited(fsize) if fsize else None)


def _small_tmpfs(tmp_path: Path, size: str) -> Path | None:
    """A mounted tmpfs of `size` (unmounted at the end by the fixture), or None where mount is
    not allowed: the caller then limits the file size instead (a test must never skip)."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, check=False) if os.geteuid() == 0 else None
    return folder if done is not None and done.returncode == 0 else None


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED"])
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_a_whole_process_onto_a_full_disk_is_exit_74(fmt: str, unbuffered: bool,
                                                     tmp_path: Path) -> None:
    """`tfcli trace gpt2 > /tmp/tiny/o` (72 KB of JSON into 4 KiB) exited 0 with 4,096 bytes."""
    env = {"PYTHONUNBUFFERED": "1"} if unbuffered else {}
    tiny = _small_tmpfs(tmp_path, "4k")
    try:
        target = (tiny or tmp_path) / "out"
        done = _tfcli(["trace", "gpt2", "-f", fmt], target, env, None if tiny else 4096)
    finally:
        if tiny is not None:
            subprocess.run(["umount", str(tiny)], check=False)
    assert done.returncode == 74, done.stderr
    _one_output_error(done.stderr)


@pytest.mark.parametrize("argv", [
    ["run", *TINY, "--save-npz", "{dir}/out.npz"],
    ["depth-sweep", "--depths", "1,2", "--seq-len", "8", "-q", "--plot", "{dir}/out.png"],
], ids=["save-npz", "plot"])
def test_a_result_file_cut_short_is_exit_74_and_not_there(argv: list[str],
                                                          tmp_path: Path) -> None:
    """A file too big for the disk was renamed into place truncated (zipfile and matplotlib
    ignore BufferedWriter's short count), and said nothing."""
    folder = tmp_path / "files"
    folder.mkdir()
    args = [a.replace("{dir}", str(folder)) for a in argv]
    done = _tfcli(args, tmp_path / "stdout", {}, 2048)  # the result file is bigger; stdout too
    lines = done.stderr.splitlines()
    assert done.returncode == 74 and len(lines) == 1, done.stderr
    assert lines[0].startswith("tfcli: error: ") and "cannot write" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert list(folder.iterdir()) == [], "a truncated result file or a temporary file was left"

"""A hostile-input corpus for arguments, options, output targets and the environment.

Every option of every command (enumerated from the click command tree, so a new option is
covered the day it is added) meets hostile values for its type: huge and signed integers,
non-ASCII digits, NaN / inf / subnormal floats, empty, markup, control bytes, undecodable bytes,
long strings. Lists, texts, the SPEC argument, result files and the terminal environment get
their own cross products. Each case asserts the house rules:

    exit code as documented (2 bad input, 1 failed check, 74 unwritable output, 0 when fine),
    stderr one `tfcli: error:` line (a SpecError: up to 11 lines), under 4 KB,
    no traceback, no warning, no raw control byte or lone surrogate on stdout or stderr,
    bounded time (pytest-timeout), and no half-written file left behind.

Cases run in process through the app's guarded click group (~4 ms each); a subprocess only
where a real process matters (the locale and encoding of stdout).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from tfcli.cli.app import app
from tests.cli.guarded import run_in_memory

GROUP = typer.main.get_command(app)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
MAX_STDERR = 4096
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")  # rich's colour and cursor codes (forced)
OK, BAD, CHECK, UNWRITABLE = 0, 2, 1, 74


@dataclass(frozen=True)
class Ran:
    args: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str


def invoke(*args: str) -> Ran:
    """The app's click group as main() runs it (the guard included), on in-memory streams."""
    return Ran(tuple(args), *run_in_memory(*args))


def _short(args: tuple[str, ...]) -> str:
    return repr([a if len(a) < 80 else a[:40] + f"…({len(a)} chars)" for a in args])


def check(ran: Ran, *codes: int, report: bool = False) -> Ran:
    """The house rules for one case; `codes` the exit codes that are right for it. `report`:
    the command says what is wrong on stdout, in its result (validate), not on stderr."""
    where = _short(ran.args)
    assert ran.exit_code in codes, (where, ran.exit_code, ran.stderr[:500])
    for name, text in (("stdout", ran.stdout), ("stderr", ran.stderr)):
        assert "Traceback" not in text, (where, name, text[:2000])
        bad = CONTROL.search(text)
        assert bad is None, (where, name, repr(bad.group()), text[:500])
    assert "Warning" not in ran.stderr, (where, ran.stderr[:500])
    assert len(ran.stderr) < MAX_STDERR, (where, len(ran.stderr))
    if ran.exit_code != OK and not report:
        # a renamed option's deprecation note may come first (tests/cli/test_conventions_cli.py)
        lines = [line for line in ran.stderr.splitlines() if not line.startswith("tfcli: note: ")]
        assert lines and lines[0].startswith("tfcli: error: "), (where, ran.stderr[:500])
        assert len(lines) <= 12, (where, ran.stderr[:1000])
    return ran


# --- the command tree -----------------------------------------------------------------------

# Small valid arguments per command, as option -> value (None: a flag; "": the arguments).
BASE: dict[str, dict[str, str | None]] = {
    "params": {"": "gpt2"},
    "specs": {},
    "validate": {"": "gpt2"},
    "schema": {},
    "import-config": {},  # its one argument is the subject of its own cases
    "run": {"": "lesson-tiny", "--seq-len": "4", "--format": "json"},
    "generate": {"": "lesson-tiny", "--tokens": "1,2", "--max-new-tokens": "2", "--format": "json"},
    "trace": {"": "lesson-tiny", "--seq-len": "4"},
    "depth-sweep": {"--sublayer": "linear", "--depths": "1,2", "--seq-len": "4", "--quiet": None,
                    "--format": "json"},
    "gpus": {},
    "perf": {"": "lesson-tiny", "--gpu": "h100", "--seq-len": "4", "--format": "json"},
    "memory": {"": "lesson-tiny", "--seq-len": "4", "--format": "json"},
    "diff": {"": "lesson-tiny gpt2", "--seq-len": "4", "--format": "json"},  # two arguments
}
# Options that replace others of the base when given (the base would make them conflict).
DISPLACES = {"--text": ("--seq-len", "--tokens"), "--tokens": ("--seq-len",), "--prompt": ("--tokens",),
             "--target": (), "--d-model": (), "--batch": ()}
# depth-sweep options that only mean something with a SPEC whose block is stacked.
SPEC_SWEEP = {"": "lesson-tiny", "--depths": "1,2", "--seq-len": "4", "--quiet": None,
              "--variants": "pre", "--format": "json"}
SPEC_SWEEP_OPTIONS = {"--n-heads", "--n-kv-heads", "--d-ff", "--init-std", "--variants",
                      "--share-weights", "--batch", "--directions", "--dtype"}


def _options(command: str) -> list[typer.core.TyperOption]:
    return [p for p in GROUP.commands[command].params if p.param_type_name == "option"]


def _annotation(option: typer.core.TyperOption) -> type:
    return option.type_descriptor.annotation


def base_args(command: str, without: str = "", spec_sweep: bool = False) -> list[str]:
    base = SPEC_SWEEP if spec_sweep else BASE[command]
    drop = {without, *DISPLACES.get(without, ())}
    args: list[str] = base[""].split(" ") if "" in base else []
    for option, value in base.items():
        if option and option not in drop:
            args += [option] if value is None else [option, value]
    return args


def test_the_base_arguments_work() -> None:
    """Every case below changes one thing in these; they must succeed on their own."""
    assert set(BASE) == set(GROUP.commands)
    for command in BASE:
        if command != "import-config":
            check(invoke(command, *base_args(command)), OK)
    check(invoke("depth-sweep", *base_args("depth-sweep", spec_sweep=True)), OK)


@pytest.fixture(autouse=True)
def _in_a_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Cases run in an empty folder: a value taken as a file name lands there, where the test
    can see it, never in the checkout."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TFCLI_DEBUG", raising=False)
    yield tmp_path


# --- hostile values by type -------------------------------------------------------------------

HUGE = "9" * 4400  # past Python's 4,300-digit int() limit
LONG = "x" * 100_000
# Values no integer option may take (refused, exit 2) and values it may take or refuse.
INT_REFUSED = [HUGE, "１２", "٣", "0x10", "1e3", "3.5", "nan", "", " ", "[/]", "\x1b[31m",
               "\udcff", "1,2", LONG]
INT_EDGES = ["0", "-1", "-0", "+3", str(10**30), str(2**63), str(2**31), "1_0", " 7", "3.0"]
FLOAT_REFUSED = ["nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e309", "1" + "0" * 400,
                 "", "[/]", "\x1b[31m", "\udcff", "１.５", "0x1p-3", LONG]
FLOAT_EDGES = ["0", "-0.0", "1e-320", "5e-324", "1e308", "-1", "1_0.5", " 0.5", "2.5e-7"]
TEXT_VALUES = ["", " ", "\t", "-", ".", "..", "/", "[/]", "[bold red]x[/]",
               "[link=https://e.x]y[/link]", "\x1b]0;t\x07", "\r", "a\x00b", "\udcff", "\ud800",
               "\u202eevil", "😀", "x" * 300, LONG, "１２", "-1", HUGE, "nan", "%s%n", "~"]
LIST_REFUSED = ["", " ", ",", "1,", ",1", "1,,2", "1 2", "１,２", "1_0", "-1", "+1", "1" * 19,
                HUGE, "1e3", "1;2", "1.5", "\x1b", "[/]", "0x1", "\udcff"]
LIST_EDGES = [" 1 , 2 ", "4,4,4", "0", "0,0", "1" * 18, ",".join(["1"] * 100_000),
              ",".join(map(str, range(100_000))), "1,\t2"]


def _values(option: typer.core.TyperOption) -> list[tuple[str | None, tuple[int, ...]]]:
    """(value, acceptable exit codes) for one option; None: the flag repeated."""
    flag, kind = option.opts[0], _annotation(option)
    if option.is_flag:
        return [(None, (OK, BAD))]
    if flag in ("--tokens", "--depths") or option.metavar == "N[,N...]":  # a list; sweeps
        return [(v, (BAD,)) for v in LIST_REFUSED] + [(v, (OK, BAD)) for v in LIST_EDGES]
    if kind is int:
        return [(v, (BAD,)) for v in INT_REFUSED] + [(v, (OK, BAD)) for v in INT_EDGES]
    if kind is float:
        return [(v, (BAD,)) for v in FLOAT_REFUSED] + [(v, (OK, BAD)) for v in FLOAT_EDGES]
    if flag == "--format":
        return [(v, (BAD,)) for v in ("", "JSON", "[/]", "\x1b[31m", "tab", LONG)]
    return [(v, (OK, BAD)) for v in TEXT_VALUES]


def _option_cases() -> Iterator[tuple[str, str, bool, str | None, tuple[int, ...]]]:
    for command in GROUP.commands:
        if command == "import-config":
            continue  # no options; its argument is covered with the SPEC cases
        for option in _options(command):
            flag = option.opts[0]
            sweeps = (False, True) if command == "depth-sweep" and flag in SPEC_SWEEP_OPTIONS \
                else (False,)
            for spec_sweep in sweeps:
                for value, codes in _values(option):
                    yield command, flag, spec_sweep, value, codes


OPTION_CASES = list(_option_cases())


def _no_leftovers(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if p.name.startswith(".tfcli-")]
    assert not left, left  # a temporary file of an interrupted write


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", sorted(set(c for c, *_ in OPTION_CASES)))
def test_every_option_with_hostile_values(command: str, tmp_path: Path) -> None:
    """One test per command, its options x their hostile values (~150 cases each)."""
    for name, flag, spec_sweep, value, codes in OPTION_CASES:
        if name != command:
            continue
        args = [command, *base_args(command, flag, spec_sweep)]
        args += [flag, flag] if value is None else [flag, value]
        check(invoke(*args), *codes)
        _no_leftovers(tmp_path)


def test_a_list_of_more_items_than_any_model_takes_is_refused_by_count() -> None:
    many = ",".join(["1"] * ((1 << 20) + 1))
    for command, flag in (("run", "--tokens"), ("generate", "--tokens"),
                          ("depth-sweep", "--depths")):
        ran = check(invoke(command, *base_args(command, flag), flag, many), BAD)
        assert "items" in ran.stderr and len(ran.stderr) < 300


# --- the SPEC argument ------------------------------------------------------------------------

SPEC_VALUES = ["", " ", "-", "..", "/", "[/]", "[bold]x", "gpt", "gtp2", "GPT2", "gpt2 ",
               "gpt2.yaml", "specs/gpt2", "x" * 300, LONG, "/" + "a/" * 3000, "a\x00b",
               "\x1b[31mred", "\udcff", "\u202egpt2", "/dev/zero", "/dev/null", "/dev/stdin",
               "/etc", "/etc/passwd", "~", "$HOME", "😀", "ｇｐｔ２", "%s%n", "../" * 50,
               "emptydir", "a_file/x", "dangling", "loop"]
SPEC_COMMANDS = ["params", "run", "generate", "trace", "depth-sweep", "import-config"]


def _spec_fixtures(folder: Path) -> None:
    (folder / "emptydir").mkdir()
    (folder / "a_file").write_text("x")
    (folder / "dangling").symlink_to(folder / "nowhere")
    (folder / "loop").symlink_to(folder / "loop")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", SPEC_COMMANDS)
def test_the_spec_argument_with_hostile_values(command: str, tmp_path: Path) -> None:
    """Every hostile SPEC (or import-config DIRECTORY) is one line and exit 2; nothing here
    is a spec, and an empty name is not the current folder (which holds a config.json)."""
    _spec_fixtures(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "gpt2", "n_layer": 2}')
    rest = base_args("depth-sweep", spec_sweep=True)[1:] if command == "depth-sweep" \
        else base_args(command)[1:]
    for value in SPEC_VALUES:
        ran = check(invoke(command, value, *rest), BAD)
        assert ran.stdout == ""
        assert len(ran.stderr) < 700, (value[:20], ran.stderr[:200])  # the name is cut short


def test_validate_reports_each_hostile_spec_on_stdout_and_exits_2(tmp_path: Path) -> None:
    _spec_fixtures(tmp_path)
    ran = check(invoke("validate", *SPEC_VALUES), BAD, report=True)
    assert ran.stderr == "" and ran.stdout.count("BAD") == len(SPEC_VALUES)
    ran = check(invoke("validate", "-f", "json", *SPEC_VALUES), BAD, report=True)
    assert json.loads(ran.stdout)


def test_a_mistyped_bundled_name_gets_a_did_you_mean() -> None:
    for typo, meant in (("gtp2", "gpt2"), ("llama-2-7", "llama-2-7b"), ("gpt2 ", "gpt2"),
                        ("mistral", "mistral-7b"), ("t5small", "t5-small")):
        ran = check(invoke("params", typo), BAD)
        assert f"did you mean '{meant}'" in ran.stderr, ran.stderr


# --- result files -----------------------------------------------------------------------------

NPZ = ["run", "lesson-tiny", "--tokens", "1,2", "-f", "json", "--save-npz"]
PNG = ["depth-sweep", "--sublayer", "linear", "--depths", "2", "-q", "-f", "json", "--plot"]


def _targets(folder: Path, suffix: str) -> dict[str, tuple[str, int]]:
    """name -> (path, exit code): hostile targets for a result file, made in `folder`."""
    (folder / "adir").mkdir()
    (folder / f"real{suffix}").write_bytes(b"precious")
    (folder / f"link{suffix}").symlink_to(folder / f"real{suffix}")
    (folder / f"dirlink{suffix}").symlink_to(folder / "adir")
    (folder / f"dangling{suffix}").symlink_to(folder / "nowhere")
    os.mkfifo(folder / f"fifo{suffix}")
    (folder / "a_file").write_text("x")
    return {
        "folder": (str(folder / "adir"), BAD), "folder/": (str(folder / "adir") + "/", BAD),
        "symlink": (str(folder / f"link{suffix}"), BAD),
        "symlink to a folder": (str(folder / f"dirlink{suffix}"), BAD),
        "dangling symlink": (str(folder / f"dangling{suffix}"), BAD),
        "fifo": (str(folder / f"fifo{suffix}"), BAD), "/dev/null": (os.devnull, BAD),
        "/dev/full": ("/dev/full", BAD), "/": ("/", BAD), ".": (".", BAD), "..": ("..", BAD),
        "empty": ("", BAD), "blank": ("   ", BAD), "-": ("-", BAD),
        "missing folder": (str(folder / "missing" / f"x{suffix}"), BAD),
        "file as folder": (str(folder / "a_file" / f"x{suffix}"), BAD),
        "nul": (str(folder / f"a\x00b{suffix}"), BAD),
        "300-char name": (str(folder / ("n" * 300 + suffix)), BAD),
        "5000-char path": (str(folder / ("d/" * 2500)) + suffix, BAD),
        "new, markup and escapes": (str(folder / f"[link=x]y[b]\x1b[31m\u202e{suffix}"), OK),
        "new, upper-case suffix": (str(folder / f"UP{suffix.upper()}"), OK),
        "undecodable name": (str(folder / f"\udcff{suffix}"), OK),
    }


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("args", "suffix"), [(NPZ, ".npz"), (PNG, ".png")])
def test_result_files_at_hostile_targets(args: list[str], suffix: str, tmp_path: Path) -> None:
    targets = _targets(tmp_path, suffix)
    for name, (target, code) in targets.items():
        ran = check(invoke(*args, target), code)
        assert (name, ran.exit_code) == (name, code)
        _no_leftovers(tmp_path)
        if code == OK:
            assert Path(target).read_bytes()[:2] in (b"PK", b"\x89P"), name
    assert (tmp_path / f"real{suffix}").read_bytes() == b"precious"  # the symlink's file
    assert (tmp_path / f"link{suffix}").is_symlink()
    assert stat.S_ISFIFO(os.lstat(tmp_path / f"fifo{suffix}").st_mode)
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)
    assert sorted(p.name for p in (tmp_path / "adir").iterdir()) == []


# --- the environment --------------------------------------------------------------------------

TABLE_COMMANDS = {  # each command's table form (the default), small and valid
    "params": ["gpt2"], "specs": [], "validate": ["gpt2"], "schema": [],
    "run": ["lesson-tiny", "--tokens", "1,2"],
    "generate": ["lesson-tiny", "--tokens", "1,2", "--max-new-tokens", "2"],
    "trace": ["lesson-tiny", "--seq-len", "4"],
    "depth-sweep": ["--sublayer", "linear", "--depths", "1,2", "-q"],
}
ENVIRONMENTS = [{"COLUMNS": "0"}, {"COLUMNS": "-5"}, {"COLUMNS": "abc"}, {"COLUMNS": "1"},
                {"COLUMNS": "100000"}, {"COLUMNS": "9" * 400}, {"LINES": "0"},
                {"TERM": "dumb"}, {"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}, {"COLUMNS": "٨٠"}]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: ",".join(f"{k}={v[:8]}" for k, v in e.items()))
def test_every_table_in_a_hostile_terminal_environment(env: dict[str, str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A nonsense width falls back to a sane one: every command still answers (exit 0), with
    no control byte (FORCE_COLOR is asked for colour, which travels as style codes only on a
    terminal: here stdout is not one)."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for command, args in TABLE_COMMANDS.items():
        ran = invoke(command, *args)
        if "FORCE_COLOR" in env:  # colour asked for: rich's own style codes, and only those
            ran = Ran(ran.args, ran.exit_code, CSI.sub("", ran.stdout), CSI.sub("", ran.stderr))
        check(ran, OK)
        assert ran.stdout.strip(), command
        assert max(map(len, ran.stdout.splitlines())) <= 100_000


ASCII_ENVIRONMENTS = [{"PYTHONIOENCODING": "ascii"},
                      {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("env", ASCII_ENVIRONMENTS, ids=lambda e: ",".join(e.values()))
def test_an_ascii_only_stdout_gets_every_table(env: dict[str, str], tmp_path: Path) -> None:
    """A real process whose stdout cannot encode box characters or '×' (an old terminal, a C
    locale, a cron job): each command answers exit 0, with no traceback. One process runs every
    command, to keep the interpreter's start-up paid once."""
    script = tmp_path / "all.py"
    script.write_text(
        "import sys\nfrom tfcli.cli.app import app\nimport typer\n"
        "group = typer.main.get_command(app)\n"
        f"commands = {TABLE_COMMANDS!r}\n"
        "for name, args in commands.items():\n"
        "    code = group.main([name, *args], prog_name='tfcli', standalone_mode=False)\n"
        "    sys.stdout.flush()\n"
        "    print(f'@@ {name} {code}', file=sys.stderr, flush=True)\n")
    base = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LC_CTYPE")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=110,
                          env={**base, **env, "COLUMNS": "80"})
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr[-2000:]
    codes = dict(line.split()[1:] for line in stderr.splitlines() if line.startswith("@@ "))
    assert codes == {name: "0" for name in TABLE_COMMANDS}, stderr[-2000:]
    assert "Traceback" not in stderr and "Error" not in stderr, stderr[-2000:]
    assert b"\x1b" not in done.stdout and done.stdout.count(b"\n") > 20

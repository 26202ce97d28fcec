"""A hostile corpus over issue 28's surfaces, run as a whole process per case, as a user's shell
would: `python -m tests.corpus.hostile_corpus [--only CLASS] [-v]`.

Each case is a command line (with its environment, files and, for the signal cases, a signal sent
at a point of the run) and what must hold; every case must also show no traceback, no Python or
NumPy warning, no flood (at most MAX_STDERR_LINES lines on stderr) and no hang (CASE_TIMEOUT_S).
The summary prints, per class, the cases run and those that broke the contract, with the first
line of what went wrong. Exit 1 when any case broke it.

Not collected by pytest (no test_ prefix): it is the end-of-session check the issue asks for, a
few minutes of subprocesses; the same classes are tested, table by table, in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.checkpoints.hub_server import HubHandler, serve  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CASE_TIMEOUT_S = 90
MAX_STDERR_LINES = 4  # the error line, or a result's notes
EXIT_OK, EXIT_BAD, EXIT_CHECK, EXIT_IO = 0, 2, 1, 74


@dataclass
class Outcome:
    code: int
    stdout: bytes
    stderr: str
    seconds: float


@dataclass
class Case:
    klass: str
    name: str
    argv: list[str]
    check: Callable[[Outcome], str | None]  # None: holds; else what went wrong
    env: dict[str, str] = field(default_factory=dict)
    fsize: int | None = None  # RLIMIT_FSIZE for the child (a full disk for files it writes)
    stdout_file: Path | None = None  # stdout redirected to this file (else a pipe)
    signal_at: tuple[int, float | str] | None = None  # (signal, seconds or "first-output")
    cwd: Path | None = None


# --- checks ------------------------------------------------------------------------------------


def exit_with(code: int, *needles: str, stdout_has: str = "") -> Callable[[Outcome], str | None]:
    def check(out: Outcome) -> str | None:
        if out.code != code:
            return f"exit {out.code}, wanted {code}: {first_line(out.stderr)}"
        if stdout_has and stdout_has not in " ".join(out.stdout.decode("utf-8", "replace").split()):
            return f"stdout does not say {stdout_has!r}"
        if code > 128:  # a signal: quiet, as a shell's Ctrl-C is
            return f"said {first_line(out.stderr)!r} on a signal" if out.stderr.strip() else None
        if code != EXIT_OK:
            lines = out.stderr.strip().splitlines()
            errors = [line for line in lines if line.startswith("tfcli: error: ")]
            if len(errors) != 1:
                return f"{len(errors)} error lines: {first_line(out.stderr)}"
            missing = [n for n in needles if n not in errors[0]]
            if missing:
                return f"the line does not name {missing}: {errors[0][:200]}"
        return None
    return check


def one_of(*checks: Callable[[Outcome], str | None]) -> Callable[[Outcome], str | None]:
    def check(out: Outcome) -> str | None:
        problems = [c(out) for c in checks]
        return None if any(p is None for p in problems) else " | ".join(p or "" for p in problems)
    return check


def complete_or_74(reference: bytes, target: Path) -> Callable[[Outcome], str | None]:
    """A write onto a full disk: either every byte of the reference output, or exit 74 with one
    line (and then whatever is in the file is not claimed to be the result)."""
    def check(out: Outcome) -> str | None:
        written = target.read_bytes() if target.exists() else b""
        if out.code == EXIT_OK:
            return None if written == reference else (
                f"exit 0 with {len(written):,} of {len(reference):,} bytes (truncated)")
        return exit_with(EXIT_IO, "cannot write the output")(out)
    return check


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:200]


def generic(out: Outcome) -> str | None:
    if "Traceback" in out.stderr:
        return "a traceback: " + out.stderr.strip().splitlines()[-1][:200]
    if "Warning" in out.stderr or "warnings.warn" in out.stderr:
        return "a warning on stderr: " + first_line(out.stderr)
    if "panicked" in out.stderr and "tfcli:" not in out.stderr.split("panicked")[0][-80:]:
        return "a Rust panic's text on stderr"
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    if len(lines) > MAX_STDERR_LINES:
        return f"{len(lines)} lines on stderr (a flood): {first_line(out.stderr)}"
    if out.code == 70:
        return "internal error: " + first_line(out.stderr)
    return None


# --- running a case ----------------------------------------------------------------------------


def run_case(case: Case) -> Outcome:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TFCLI_"))}
    # PYTHONDONTWRITEBYTECODE: under RLIMIT_FSIZE a child writing a .pyc would truncate it in
    # the shared tree (it did once: every later import of that module failed)
    env |= {"PYTHONPATH": str(ROOT), "COLUMNS": "120", "PYTHONDONTWRITEBYTECODE": "1"} | case.env

    def limits() -> None:
        # as a user's shell starts it: SIGINT not ignored, even when this runner was started in
        # the background of a script (which ignores SIGINT, and tfcli keeps an ignored signal)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if case.fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a short write, then EFBIG, as a full disk
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))

    stdout = open(case.stdout_file, "wb") if case.stdout_file else subprocess.PIPE  # noqa: SIM115
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "tfcli", *case.argv], stdout=stdout,
                            stderr=subprocess.PIPE, env=env, cwd=case.cwd or ROOT,
                            preexec_fn=limits)
    # Both pipes drained by threads of their own (communicate() would race the stdout reader
    # for the bytes); the first stdout bytes are an event a signal can wait for.
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    first = threading.Event()

    def drain(pipe: Any, chunks: list[bytes], seen: threading.Event | None) -> None:
        while chunk := pipe.read1(65536):
            chunks.append(chunk)
            if seen is not None:
                seen.set()
    readers = [threading.Thread(target=drain, args=(proc.stderr, err_chunks, None), daemon=True)]
    if case.stdout_file is None:
        readers.append(threading.Thread(target=drain, args=(proc.stdout, out_chunks, first),
                                        daemon=True))
    for reader in readers:
        reader.start()
    if case.signal_at is not None:
        signum, when = case.signal_at
        if when == "first-output":
            first.wait(CASE_TIMEOUT_S)
            time.sleep(0.3)
        else:
            time.sleep(float(when))
        if proc.poll() is None:
            proc.send_signal(signum)
    hung = False
    try:
        proc.wait(timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        hung = True
    finally:
        if case.stdout_file:
            stdout.close()  # type: ignore[union-attr]
    for reader in readers:
        reader.join(5)
    err = b"".join(err_chunks).decode("utf-8", "replace")
    if hung:
        return Outcome(-9, b"", f"HANG: no exit after {CASE_TIMEOUT_S} s\n" + err, 0.0)
    return Outcome(proc.returncode, b"".join(out_chunks), err, time.perf_counter() - start)


def reference_output(argv: list[str], env: dict[str, str] | None = None) -> bytes:
    out = run_case(Case("", "", argv, lambda o: None, env=env or {}))
    if out.code != 0:
        raise SystemExit(f"reference run failed: tfcli {' '.join(argv)}: {out.stderr}")
    return out.stdout


# --- the cases, by class -----------------------------------------------------------------------

PERF = ["perf", "gpt2", "--gpu", "a100-80gb"]


def options_cases(work: Path) -> list[Case]:
    """28.1: an option the mode does not read is refused by name, before any work."""
    unread = [  # (argv, the option that must be named)
        *[(["memory", "gpt2", *o], o[0]) for o in (
            ["--gpus", "8"], ["--tp", "2"], ["--zero", "3"], ["--optimizer", "sgd"],
            ["--recompute", "full"], ["--lora-rank", "8"], ["--dropout"])],
        (["memory", "gpt2", "--group-size", "64"], "--group-size"),
        (["memory", "gpt2", "--dtype", "float16", "--group-size", "64"], "--group-size"),
        (["memory", "gpt2", "--train", "--kv-dtype", "int8"], "--kv-dtype"),
        *[([*PERF, *o], o[0]) for o in (["--train-tokens", "1e9"], ["--recompute", "full"],
                                        ["--gpus", "8"])],
        (["trace", "gpt2", "--seed", "3"], "--seed"),
        (["memory", "gpt2", "--fit"], "--fit"),
        (["depth-sweep", "--sublayer", "linear", "--n-heads", "2"], "--n-heads"),
    ]
    cases = [Case("1 options", " ".join(argv), argv, exit_with(EXIT_BAD, name))
             for argv, name in unread]
    read = [["memory", "gpt2", "--train", "--gpus", "8", "--tp", "2", "--zero", "3"],
            ["memory", "gpt2", "--dtype", "int4", "--group-size", "64"],
            ["memory", "gpt2", "--kv-dtype", "int8"], [*PERF, "--train", "--gpus", "8"]]
    cases += [Case("1 options", "read: " + " ".join(a), a, exit_with(EXIT_OK)) for a in read]
    cases.append(Case("1 options", "zero-3 past the tensors",
                      ["memory", "lesson-tiny", "--train", "--zero", "3", "--gpus", "100000"],
                      exit_with(EXIT_BAD, "--gpus")))
    return cases


WRITERS = {  # every command that writes a result, kept small
    "params": ["params", "gpt2"], "trace": ["trace", "gpt2"],
    "run": ["run", "lesson-tiny", "--batch", "8", "--seq-len", "64"],
    "generate": ["generate", "lesson-tiny", "--tokens", "1,2", "--max-new-tokens", "60"],
    "diff": ["diff", "gpt2", "gpt2-medium"], "gpus": ["gpus"],
    "perf": [*PERF, "--seq-len", "128,256,512,1024"],
    "memory": ["memory", "gpt2", "--seq-len", "128,256,512,1024"],
    "depth-sweep": ["depth-sweep", "--depths", "1,2,4", "--seq-len", "8", "-q"],
}
TEXT_WRITERS = {"specs": ["specs", "gpt2"], "schema": ["schema"],
                "import-config": ["import-config", "{gguf}"]}


def write_cases(work: Path, gguf_file: Path) -> list[Case]:
    """28.2: onto a full disk (RLIMIT_FSIZE, under the size of the output), buffered or not,
    every command and format is complete or exit 74 with one line."""
    cases = []
    rows = [(n, [*a, "-f", f]) for n, a in WRITERS.items() for f in ("table", "json", "csv",
                                                                      "markdown")]
    rows += [(n, [str(gguf_file) if x == "{gguf}" else x for x in a])
             for n, a in TEXT_WRITERS.items()]
    for i, (name, argv) in enumerate(rows):
        reference = reference_output(argv)
        for unbuffered in (False, True):
            target = work / f"out-{i}-{int(unbuffered)}"
            env = {"PYTHONUNBUFFERED": "1"} if unbuffered else {}
            size = max(len(reference) // 2, 1)
            cases.append(Case("2 writes", f"{' '.join(argv)} {'unbuffered' if unbuffered else ''}",
                              argv, complete_or_74(reference, target), env=env, fsize=size,
                              stdout_file=target))
    return cases


def signal_cases(work: Path) -> list[Case]:
    """28.3: SIGINT / SIGTERM / SIGHUP keep what was produced and leave no temporary file."""
    cases = []
    gen = ["generate", "gpt2", "--layers", "6", "--tokens", "1,2", "--max-new-tokens", "1000",
           "--ignore-eos"]  # ~2 s of set-up, then ~15 s of decoding: the signal lands mid-way
    for signum, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        def kept(out: Outcome, code: int = code) -> str | None:
            if out.code != code:
                return f"exit {out.code}, wanted {code}: {first_line(out.stderr)}"
            if not out.stdout.strip():
                return "nothing kept on stdout"
            return None if "interrupted" in out.stderr else "no note that it was interrupted"
        cases.append(Case("3 signals", f"generate | pipe, {signum.name}", gen, kept,
                          signal_at=(signum, 6.0)))
        for k, delay in enumerate((0.05, 0.2, 0.6, 1.5, 3.0)):
            folder = work / f"npz-{signum.name}-{k}"
            folder.mkdir()

            def no_tmp(out: Outcome, folder: Path = folder, code: int = code,
                       signum: int = signum) -> str | None:
                left = [p.name for p in folder.iterdir() if p.name.startswith(".tfcli-")]
                if left:
                    return f"left {left}"
                # -signum: the signal landed while the interpreter itself was starting, before
                # any tfcli code (or file) existed; a shell reports it as 128 + n all the same
                if out.code not in (0, code, -signum):
                    return f"exit {out.code}: {first_line(out.stderr)}"
                return None
            cases.append(Case("3 signals", f"run --save-npz, {signum.name} at {delay}s",
                              ["run", "gpt2", "--layers", "4", "--seq-len", "256", "--save-npz",
                               str(folder / "out.npz")], no_tmp, signal_at=(signum, delay)))
    return cases


def degenerate_cases(work: Path) -> list[Case]:
    """28.8: weights that overflow a norm in float32 are named, pointing at float64."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors, write_model

    cases = []
    for scale in (1e20, 1e25, 1e30):
        tensors = gpt2_tensors(np.random.default_rng(0))
        tensors["transformer.wte.weight"] *= scale
        model = write_model(work / f"huge-{scale:g}", GPT2_CONFIG, tensors)
        for argv in (["run", str(model), "--tokens", "1,2,3"],
                     ["generate", str(model), "--tokens", "1,2", "--max-new-tokens", "2"],
                     ["run", str(model), "--tokens", "1,2,3", "-f", "json"]):
            cases.append(Case("8 degenerate", f"{argv[0]} x{scale:g} {' '.join(argv[3:])}", argv,
                              exit_with(EXIT_CHECK, "float64")))
    return cases


COMMIT = "0123456789abcdef0123456789abcdef01234567"
TINY_LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 100,
              "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}


def hub_cache(home: Path, repo: str, ref: str = COMMIT) -> Path:
    root = home / "hub" / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(ref)
    return snapshot


def broken_snapshot_cases(work: Path) -> list[Case]:
    """28.9: a broken cached snapshot is named as such, not 'the repository has no config.json'."""
    breakages: dict[str, Callable[[Path], None]] = {
        "dangling link": lambda s: (s / "config.json").symlink_to(s / "nowhere"),
        "link loop": lambda s: (s / "config.json").symlink_to(s / "config.json"),
        "fifo": lambda s: os.mkfifo(s / "config.json"),
        "folder": lambda s: (s / "config.json").mkdir(),
        "empty": lambda s: (s / "config.json").write_text(""),
    }
    cases = []
    for k, (name, breaking) in enumerate(breakages.items()):
        home = work / f"hf-{k}"
        breaking(hub_cache(home, "org/model"))
        for command in ("params", "trace", "import-config"):
            cases.append(Case("9 one line", f"{command} cached snapshot: {name}",
                              [command, "org/model"], refuses_without("has no config.json"),
                              env={"HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}))
    home = work / "hf-emptyref"
    (hub_cache(home, "org/model", ref="") / "config.json").write_text(json.dumps(TINY_LLAMA))
    cases.append(Case("9 one line", "params cached snapshot: empty refs/main",
                      ["params", "org/model"], refuses_without("has no config.json"),
                      env={"HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}))
    return cases


def refuses_without(phrase: str) -> Callable[[Outcome], str | None]:
    def check(out: Outcome) -> str | None:
        problem = exit_with(EXIT_BAD)(out)
        if problem:
            return problem
        return f"still says '{phrase}'" if phrase in out.stderr else None
    return check


def endpoint_cases(work: Path) -> list[Case]:
    """28.4: a malformed HF_ENDPOINT is one line naming it (it was a URL-parsing crash)."""
    values = ["http://[::1", "ht tp://x", "http://host:99999", "://nohost", "http://",
              "file:///etc/passwd", "http://a\x7fb", "x" * 5000]
    cases = []
    for k, value in enumerate(values):
        home = work / f"hf-endpoint-{k}"
        home.mkdir()
        for argv in (["params", "org/model"], ["run", "org/model", "--tokens", "1"]):
            cases.append(Case("4 dependencies", f"{argv[0]} HF_ENDPOINT={value[:20]!r}", argv,
                              exit_with(EXIT_BAD, "HF_ENDPOINT"),
                              env={"HF_HOME": str(home), "HF_ENDPOINT": value}))
    return cases


def weights_gguf_cases(work: Path, gguf_file: Path) -> list[Case]:
    """28.9: --weights given a GGUF file names the real cause, not 'not UTF-8 text'."""
    return [Case("9 one line", f"{c} lesson-tiny --weights FILE.gguf",
                 [c, "lesson-tiny", "--tokens", "1", "--weights", str(gguf_file)],
                 refuses_without("UTF-8")) for c in ("run", "generate")]


class _Endpoint(HubHandler):
    """A local Hub whose repository `fault/<name>` misbehaves as <name> says (hub_cases)."""

    def answer(self) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        api = parts[:2] == ["api", "models"]
        fault = parts[3] if api and len(parts) > 3 else parts[1] if len(parts) > 1 else ""
        if fault == "silent":  # accepts, reads, never answers
            time.sleep(600)
            return None
        if fault == "hangup":  # closes the connection before any answer
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        if api:
            return self._listing(fault)
        return self._file(fault, parts[-1])

    def _listing(self, fault: str) -> None:
        if fault == "listing-429-a-day":
            return self.send(429, {"Retry-After": "86400", "Content-Length": "0"})
        if fault == "listing-not-json":
            return self.send(200, {"Content-Type": "application/json", "Content-Length": "7"},
                              b"{oops:1")
        sha = {"sha-dotdot": "../../../../tmp", "sha-upper": COMMIT.upper(),
               "sha-41": COMMIT + "0", "sha-slash": COMMIT[:20] + "/" + COMMIT[21:]}.get(fault,
                                                                                         COMMIT)
        config_size = 20 * 2**20 if fault == "listed-20mib" else len(CORPUS_CONFIG)
        weight_size = 10 * 2**40 if fault == "weights-10tib" else 1000
        siblings = [{"rfilename": "config.json", "size": config_size},
                    {"rfilename": "model.safetensors", "size": weight_size}]
        body = json.dumps({"id": f"fault/{fault}", "sha": sha, "siblings": siblings}).encode()
        self.send(200, {"Content-Type": "application/json", "Content-Length": str(len(body))},
                   body)

    def _file(self, fault: str, name: str) -> None:
        headers = {"X-Repo-Commit": "/etc" if fault == "commit-header-abs" else COMMIT,
                   "ETag": '"' + "f" * 40 + '"', "Content-Length": str(len(CORPUS_CONFIG))}
        if fault == "resolve-500":
            return self.send(500, {"Content-Length": "0"})
        if fault == "resolve-503-a-day":
            return self.send(503, {"Retry-After": "86400", "Content-Length": "0"})
        if self.command == "HEAD":
            return self.send(200, headers)
        if fault in ("drip", "drip-ctrl-c"):
            return self.drip(headers, CORPUS_CONFIG)
        if fault == "short-body":
            return self.short_body(headers, CORPUS_CONFIG)
        if fault == "body-20mib":  # a listing and headers that say small, a body that is not
            self.send(200, headers | {"Content-Length": str(20 * 2**20)})
            for _ in range(20):
                self.wfile.write(b" " * 2**20)
            return None
        return self.send(200, headers, CORPUS_CONFIG)


CORPUS_CONFIG = json.dumps(TINY_LLAMA).encode()
HUB_FAULTS = ["listing-429-a-day", "listing-not-json", "sha-dotdot", "sha-upper", "sha-41",
              "sha-slash", "listed-20mib", "weights-10tib", "commit-header-abs", "resolve-500",
              "resolve-503-a-day", "drip", "short-body", "body-20mib", "silent", "hangup"]


def hub_cases(work: Path) -> list[Case]:
    """28.6: a local endpoint that misbehaves, on the surfaces that fetch: one line, exit 2,
    within the budget (TFCLI_HUB_TIMEOUT=6, and once the default), nothing partial in the cache,
    no path made of what the endpoint sent; Ctrl-C during a download exits 130."""
    url = serve(_Endpoint).url  # type: ignore[attr-defined]
    cases = []
    surfaces = (["params"], ["import-config"], ["run", "--tokens", "1"])
    for fault in HUB_FAULTS:
        for surface in surfaces:
            if fault == "weights-10tib" and surface[0] != "run":
                continue  # only a run downloads the weights
            home = work / f"hub-{fault}-{surface[0]}"
            home.mkdir()
            argv = [surface[0], f"fault/{fault}", *surface[1:]]
            cases.append(Case("6 hub", f"{' '.join(argv)}", argv,
                              within(20, clean_cache(home, exit_with(EXIT_BAD))),
                              env={"HF_HOME": str(home), "HF_ENDPOINT": url,
                                   "TFCLI_HUB_TIMEOUT": "6"}))
    home = work / "hub-default-budget"
    home.mkdir()
    cases.append(Case("6 hub", "params fault/drip, the default budget", ["params", "fault/drip"],
                      within(45, clean_cache(home, exit_with(EXIT_BAD))),
                      env={"HF_HOME": str(home), "HF_ENDPOINT": url}))
    for signum, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        home = work / f"hub-ctrl-c-{signum.name}"
        home.mkdir()
        cases.append(Case("6 hub", f"params fault/drip-ctrl-c, {signum.name} mid-download",
                          ["params", "fault/drip-ctrl-c"],
                          within(8, clean_cache(home, exit_with(code))),
                          env={"HF_HOME": str(home), "HF_ENDPOINT": url},
                          signal_at=(signum, 4.0)))
    return cases


def within(seconds: float, check: Callable[[Outcome], str | None]) -> Callable[[Outcome], str | None]:
    def timed(out: Outcome) -> str | None:
        if out.seconds > seconds + (4.0 if seconds < 30 else 0):  # interpreter start-up
            return f"took {out.seconds:.0f} s, past {seconds} s"
        return check(out)
    return timed


def clean_cache(home: Path, check: Callable[[Outcome], str | None]) -> Callable[[Outcome], str | None]:
    """No partial download left, and nothing made outside HF_HOME/hub from a sent path."""
    def cached(out: Outcome) -> str | None:
        partial = list(home.glob("hub/**/*.incomplete"))
        if partial:
            return f"left {partial[0].name}"
        outside = [p.name for p in home.iterdir() if p.name not in ("hub", "xet", "token", ".agent_harnesses.json")]
        if outside:
            return f"made {outside} in HF_HOME"
        if out.code == EXIT_BAD and "check the connection" in out.stderr \
                and "HTTP" in out.stderr:
            return "an HTTP status read as 'check the connection'"
        return check(out)
    return cached


def _gguf_llama(path: Path, *, d: int = 32, ff: int = 64, tokens: list[str] | None = None,
                tokenizer: Callable[[object], None] | None = None, arch: str = "llama") -> Path:
    """A tiny GGUF (ne0 a multiple of 32, so block types fit) with an optional tokenizer."""
    import numpy as np

    from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, write_gguf

    vocab = len(tokens) if tokens else 64
    tensors = llama_tensors(d=d, ff=ff, vocab=vocab)
    metadata: dict[str, object] = llama_metadata(d=d, ff=ff)
    if arch == "gemma3":
        metadata = {k.replace("llama.", "gemma3."): v for k, v in metadata.items()}
        metadata["gemma3.attention.sliding_window"] = 64
        for i in range(2):
            for name in ("post_attention_norm", "post_ffw_norm"):
                tensors[f"blk.{i}.{name}.weight"] = np.ones(d, np.float32)
            for name in ("attn_q_norm", "attn_k_norm"):
                tensors[f"blk.{i}.{name}.weight"] = np.ones(d // 4, np.float32)

    def extra(writer: object) -> None:
        if tokens is not None:
            writer.add_tokenizer_model("gpt2" if arch == "llama" else "llama")  # type: ignore[attr-defined]
            writer.add_token_list(tokens)  # type: ignore[attr-defined]
        if tokenizer is not None:
            tokenizer(writer)
    return write_gguf(path, arch, metadata, tensors, extra=extra)


GGUF_SURFACES = (["params"], ["run", "--tokens", "1,2"], ["trace", "--execute", "--seq-len", "2"],
                 ["memory"], ["import-config"])


def _patched(work: Path, name: str, **patch: int) -> Path:
    from tests.checkpoints.gguf_files import patch_tensor

    return patch_tensor(_gguf_llama(work / f"{name}.gguf"), "blk.1.attn_q.weight", **patch)


def gguf_layout_cases(work: Path) -> list[Case]:
    """28.5: a GGUF tensor inside another's bytes or off general.alignment, a safetensors entry
    overlapping another, tokenizer arrays of the wrong length or type and special-token ids past
    the vocabulary: refused where the header is read, on every surface that reads it."""
    import struct

    from tests.checkpoints.gguf_files import patch_tensor

    files = {"overlap (blk.1 q at blk.0 q)": _patched(work, "overlap", offset=0),
             "misaligned by 4": _patched(work, "misaligned", offset=4 + 32 * 64),
             "misaligned by 1": _patched(work, "misaligned1", offset=1)}
    twin = _gguf_llama(work / "twin.gguf")
    files["two tensors one range"] = patch_tensor(twin, "blk.0.attn_k.weight", offset=0)
    n = 64
    arrays = {
        "token_type too short": lambda w: w.add_token_types([1] * (n - 1)),
        "scores too long": lambda w: w.add_token_scores([0.0] * (n + 5)),
        "scores as strings": lambda w: w.add_array("tokenizer.ggml.scores", ["x"] * n),
        "token_type as floats": lambda w: w.add_array("tokenizer.ggml.token_type", [1.5] * n),
        "bos past the vocabulary": lambda w: w.add_bos_token_id(n + 100),
        "eos past the vocabulary": lambda w: w.add_eos_token_id(2**31),
        "unk past the vocabulary": lambda w: w.add_unk_token_id(n),
    }
    tokens = [chr(0x41 + i % 26) * (1 + i // 26) for i in range(n)]
    for k, (name, add) in enumerate(arrays.items()):
        files[name] = _gguf_llama(work / f"tok-{k}.gguf", tokens=tokens, tokenizer=add)
    cases = []
    for name, path in files.items():
        surfaces = GGUF_SURFACES if not name.endswith("vocabulary") and "score" not in name \
            and "type" not in name else (["run", "--text", "AB"], ["generate", "--text", "AB",
                                                                   "--max-new-tokens", "1"])
        for surface in surfaces:
            argv = [surface[0], str(path), *surface[1:]]
            cases.append(Case("5 layout", f"{surface[0]} GGUF: {name}", argv,
                              exit_with(EXIT_BAD, str(path))))
    # safetensors: an entry that overlaps another's bytes, one with a hole before it
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors, write_model

    for k, how in enumerate(("overlap", "hole")):
        model = write_model(work / f"st-{how}", GPT2_CONFIG, gpt2_tensors(np.random.default_rng(0)))
        data = bytearray((model / "model.safetensors").read_bytes())
        (length,) = struct.unpack_from("<Q", data)
        header = json.loads(data[8:8 + length])
        entries = sorted((v["data_offsets"][0], k) for k, v in header.items() if k != "__metadata__")
        second = header[entries[1][1]]
        size = second["data_offsets"][1] - second["data_offsets"][0]
        start = 0 if how == "overlap" else second["data_offsets"][0] + 4
        second["data_offsets"] = [start, start + size] if how == "overlap" else \
            [second["data_offsets"][0] + 4, second["data_offsets"][1] + 4]
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        (model / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text
                                                  + data[8 + length:])
        refused = exit_with(EXIT_BAD, "model.safetensors")
        cases.append(Case("5 layout", f"run safetensors: {how}",
                          ["run", str(model), "--tokens", "1,2"], refused))
        cases.append(Case("5 layout", f"params safetensors: {how}", ["params", str(model)],
                          one_of(refused, exit_with(EXIT_OK, stdout_has="differs: the "
                                                    "checkpoint cannot be read"))))
    return cases


def gguf_type_cases(work: Path) -> list[Case]:
    """28.4: a ggml type the header allows but tfcli cannot dequantise is not 'equal' in params
    and is refused by run before any work, naming file, tensor and type."""
    cases = []
    for type_id, type_name in ((9, "Q8_1"), (24, "I8"), (25, "I16"), (26, "I32")):
        path = _patched(work, f"type-{type_name}", ggml_type=type_id)

        def not_equal(out: Outcome, type_name: str = type_name) -> str | None:
            if out.code not in (EXIT_OK, EXIT_BAD):
                return f"exit {out.code}: {first_line(out.stderr)}"
            text = out.stdout.decode("utf-8", "replace") + out.stderr
            if out.code == EXIT_OK and type_name not in text:
                return "params does not mention the type it cannot compute"
            return None
        cases.append(Case("4 dependencies", f"params GGUF with a {type_name} tensor",
                          ["params", str(path)], not_equal))
        # (trace --execute draws its own random weights: it reads no tensor, and runs)
        for surface in (["run", "--tokens", "1,2"], ["generate", "--tokens", "1",
                                                     "--max-new-tokens", "1"]):
            cases.append(Case("4 dependencies", f"{surface[0]} GGUF with a {type_name} tensor",
                              [surface[0], str(path), *surface[1:]],
                              exit_with(EXIT_BAD, type_name, "blk.1.attn_q.weight")))
    return cases


def _tokenizer_dir(work: Path, name: str, tokenizer: dict[str, object]) -> Path:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors, write_model

    model = write_model(work / f"tok-{name}", GPT2_CONFIG, gpt2_tensors(np.random.default_rng(0)))
    base: dict[str, object] = {"version": "1.0", "truncation": None, "padding": None,
                               "added_tokens": [], "normalizer": None,
                               "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
                               "decoder": None,
                               "model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1, "<unk>": 2},
                                         "unk_token": "<unk>"}}
    (model / "tokenizer.json").write_text(json.dumps(base | tokenizer))
    return model


def tokenizer_cases(work: Path) -> list[Case]:
    """28.4 and 28.7: tokenizer.json files that fail inside the Rust library (a missing unknown
    token, a regex that backtracks, a panic) or grow the work past the input (a normaliser that
    multiplies the text, a vocabulary past any real one), on run and generate."""
    vocab = {"a": 0, "b": 1}
    long_vocab = {f"t{i}": i for i in range(300_000)}
    hostile: dict[str, dict[str, object]] = {
        "unk missing": {"model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}},
        "bpe unk missing": {"model": {"type": "BPE", "vocab": vocab, "merges": [],
                                      "unk_token": "<unk>", "dropout": None}},
        "backtracking regex": {"pre_tokenizer": {"type": "Split",
                                                 "pattern": {"Regex": "(a|aa)+$"},
                                                 "behavior": "Isolated", "invert": False}},
        "nested quantifier": {"pre_tokenizer": {"type": "Split",
                                                "pattern": {"Regex": "((a+)+)+b"},
                                                "behavior": "Isolated", "invert": False}},
        "replace x100000": {"normalizer": {"type": "Replace", "pattern": {"String": "a"},
                                           "content": "a" * 100_000}},
        "prepend x100000": {"normalizer": {"type": "Prepend", "prepend": "b" * 100_000}},
        "nested replaces": {"normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"String": "a"}, "content": "a" * 1000}] * 3}},
        "300k-token vocab": {"model": {"type": "WordLevel", "vocab": long_vocab,
                                       "unk_token": "t0"}},
        "a 1 MB token": {"model": {"type": "WordLevel", "vocab": {"a": 0, "x" * 2**20: 1,
                                                                   "<unk>": 2},
                                   "unk_token": "<unk>"}},
    }
    cases = []
    for k, (name, change) in enumerate(hostile.items()):
        model = _tokenizer_dir(work, str(k), change)
        text = "a" * 3000 + "c"
        for surface in (["run", "--text", text], ["generate", "--text", text,
                                                  "--max-new-tokens", "1"]):
            argv = [surface[0], str(model), *surface[1:]]
            cases.append(Case("4 dependencies" if "unk" in name or "regex" in name or
                              "quantifier" in name else "7 growth",
                              f"{surface[0]} tokenizer.json: {name}", argv,
                              within(30, one_of(exit_with(EXIT_BAD, "tokenizer.json"),
                                                exit_with(EXIT_OK)))))
    return cases


def gemma_vocab_cases(work: Path) -> list[Case]:
    """28.7: Gemma's merges rebuilt from a vocabulary of long tokens, in time linear in its
    characters: a 20,000-character token family answers in seconds, or is refused by a bound."""
    cases = []
    for length in (5_000, 20_000, 60_000):
        base = "ab" * (length // 2)
        tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "a", "b"] + [base[:n] for n in
                                                                 range(2, length, length // 40)]
        path = _gguf_llama(work / f"gemma-long-{length}.gguf", tokens=tokens, arch="gemma3",
                           tokenizer=lambda w: (w.add_bos_token_id(2), w.add_eos_token_id(1),
                                                w.add_unk_token_id(3)))
        cases.append(Case("7 growth", f"run gemma GGUF, tokens of {length:,} characters",
                          ["run", str(path), "--text", "abab"],
                          within(30, one_of(exit_with(EXIT_OK), exit_with(EXIT_BAD, str(path))))))
    return cases


# --- the run -----------------------------------------------------------------------------------


def tiny_gguf(work: Path) -> Path:
    from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, write_gguf

    return write_gguf(work / "tiny.gguf", "llama", llama_metadata(), llama_tensors())


BUILDERS: dict[str, Callable[[Path, Path], list[Case]]] = {
    "1": lambda w, g: options_cases(w),
    "2": write_cases,
    "3": lambda w, g: signal_cases(w),
    "4": lambda w, g: endpoint_cases(w) + gguf_type_cases(w) + tokenizer_cases(w),
    "5": lambda w, g: gguf_layout_cases(w),
    "7": lambda w, g: gemma_vocab_cases(w),
    "6": lambda w, g: hub_cases(w),
    "8": lambda w, g: degenerate_cases(w),
    "9": lambda w, g: broken_snapshot_cases(w) + weights_gguf_cases(w, g),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="class numbers to run (default: all)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="tfcli-corpus-") as tmp:
        work = Path(tmp)
        gguf_file = tiny_gguf(work)
        cases = [case for key, build in BUILDERS.items() if not args.only or key in args.only
                 for case in build(work, gguf_file)]
        broken: dict[str, list[str]] = defaultdict(list)
        counts: dict[str, int] = defaultdict(int)
        for case in cases:
            out = run_case(case)
            problem = generic(out) or case.check(out)
            counts[case.klass] += 1
            if problem:
                broken[case.klass].append(f"{case.name}: {problem}")
            if args.verbose or problem:
                print(f"{'BROKE' if problem else 'ok   '} [{case.klass}] {case.name} "
                      f"({out.seconds:.1f} s){': ' + problem if problem else ''}", flush=True)
            if args.verbose and not problem and out.stderr.strip():
                print(f"        exit {out.code}: {first_line(out.stderr)}", flush=True)
    print("\nclass            cases  broke")
    for klass in sorted(counts):
        print(f"{klass:<16} {counts[klass]:>5}  {len(broken[klass]):>5}")
    print(f"{'total':<16} {sum(counts.values()):>5}  {sum(map(len, broken.values())):>5}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

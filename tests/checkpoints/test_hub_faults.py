"""Issue 28 classes 4 (HF_ENDPOINT), 6 and 9 for Hub ids: an endpoint that misbehaves - a
Retry-After of a day, a body that drips, a config.json of 64 MiB, a commit sha that is a path,
endless redirects, HTTP 503 - a malformed HF_ENDPOINT, a broken cached snapshot, Ctrl-C during
a download, and --weights given a GGUF file. Each is one line, exit 2 (130 for Ctrl-C), on
every surface that fetches from the Hub, within the budget, with no partial file left in the
cache. A local HTTP server answers as the Hub does (api/models listing, HEAD and GET of
/resolve/), with one misbehaviour per test."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.checkpoints.hub_server import HubHandler, serve
from tests.checkpoints.test_hub import COMMIT, TINY, _cache, _one_line_error, _tfcli

CONFIG = json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]} | TINY).encode()
BIG = 64 * 2**20
REPO = "org/model"
CONFIG_SURFACES = [("params",), ("trace",), ("validate",), ("import-config",)]
WEIGHT_SURFACES = [("run", "--tokens", "1"), ("generate", "--tokens", "1", "--max-new-tokens", "1")]
SURFACES = CONFIG_SURFACES + WEIGHT_SURFACES


class _Misbehaving(HubHandler):
    """The Hub for REPO at COMMIT, but for the server's `fault`."""

    def answer(self) -> None:
        fault: str = self.server.fault  # type: ignore[attr-defined]
        self.server.seen.append(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        if fault == "hangup":  # closes the connection before any answer
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        if fault == "redirect-loop":
            return self.send(302, {"Location": self.path, "Content-Length": "0"})
        if self.path.startswith("/api/models/"):
            return self._listing(fault)
        if "/resolve/" in self.path:
            return self._file(fault)
        return self.send(404, {"Content-Length": "0"})

    def _listing(self, fault: str) -> None:
        if fault == "api-503":
            return self.send(503, {"Content-Length": "0"})
        sha = {"listing-sha-path": "../..", "listing-sha-short": "abc123"}.get(fault, COMMIT)
        size = BIG if fault == "listed-64mib" else len(CONFIG)
        weights = 2**60 if fault == "listed-exabyte-weights" else 1000
        siblings = [{"rfilename": "config.json", "size": size},
                    {"rfilename": "model.safetensors", "size": weights}]
        body = json.dumps({"id": REPO, "sha": sha, "siblings": siblings}).encode()
        self.send(200, {"Content-Type": "application/json", "Content-Length": str(len(body))}, body)

    def _file(self, fault: str) -> None:
        if fault in ("retry-after-503", "retry-after-429"):
            status = 503 if fault == "retry-after-503" else 429
            return self.send(status, {"Retry-After": "86400", "Content-Length": "0"})
        headers = {"X-Repo-Commit": "../.." if fault == "header-sha-path" else COMMIT,
                   "ETag": '"' + "e" * 40 + '"', "Content-Length": str(len(CONFIG))}
        if fault == "head-64mib":
            headers["X-Linked-Size"] = str(BIG)
        if self.command == "HEAD":
            return self.send(200, headers)
        if fault == "drip":
            return self.drip(headers, CONFIG)
        if fault == "short-body":
            return self.short_body(headers, CONFIG)
        if fault == "body-64mib":  # headers that say small, a body that is not
            self.send(200, headers | {"Content-Length": str(BIG)})
            for _ in range(BIG // 2**20):
                self.wfile.write(b" " * 2**20)
            return None
        return self.send(200, headers, CONFIG)



@pytest.fixture()
def hub(request: pytest.FixtureRequest) -> Iterator[ThreadingHTTPServer]:
    server = serve(_Misbehaving, fault=getattr(request, "param", "none"), seen=[])
    yield server
    server.shutdown()


def _line(result: subprocess.CompletedProcess[str], command: str) -> str:
    """The one error line; `validate` reports on stdout (BAD ...), the others on stderr."""
    if command != "validate":
        return _one_line_error(result)
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr
    return " ".join(result.stdout.split())  # validate wraps its report


def _refused(home: Path, server: ThreadingHTTPServer, surface: tuple[str, ...],
             **env: str) -> str:
    start = time.monotonic()
    line = _line(_tfcli(home, surface[0], REPO, *surface[1:], HF_ENDPOINT=server.url,  # type: ignore[attr-defined]
                        **env), surface[0])
    assert time.monotonic() - start < 30, line
    assert not list(home.glob("hub/*/blobs/*.incomplete")), "a partial file is left"
    return line


def _fault(name: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("hub", [name], indirect=True)


@pytest.mark.parametrize("surface", SURFACES, ids=lambda s: s[0])
@pytest.mark.parametrize(("hub", "expected"), [
    ("retry-after-503", "answered HTTP 503 and asks to retry in 86,400 s"),
    ("retry-after-429", "answered HTTP 429 and asks to retry in 86,400 s"),
    ("listed-64mib", "config.json is 67,108,864 bytes on the Hub, more than tfcli reads (16 MiB)"),
    ("header-sha-path", "sent '../..' as the commit sha in the X-Repo-Commit header"),
    ("listing-sha-path", "sent '../..' as the commit sha in its file listing"),
], indirect=["hub"])
def test_a_misbehaving_endpoint_is_one_line_on_every_surface(
        tmp_path: Path, hub: ThreadingHTTPServer, surface: tuple[str, ...], expected: str) -> None:
    assert expected in _refused(tmp_path, hub, surface)
    assert not (tmp_path / "hub" / "snapshots").exists()  # '../..' made no path


@_fault("listed-64mib")
def test_a_file_too_large_in_the_listing_is_not_downloaded(
        tmp_path: Path, hub: ThreadingHTTPServer) -> None:
    _refused(tmp_path, hub, ("params",))
    assert not [r for r in hub.seen if "/resolve/" in r]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("hub", "expected"), [
    ("head-64mib", "config.json is 67,108,864 bytes on the Hub"),
    ("body-64mib", "config.json is 67,108,864 bytes on the Hub"),
    ("listing-sha-short", "sent 'abc123' as the commit sha"),
    ("api-503", "the Hub answered HTTP 503"),
    ("redirect-loop", "redirects without end"),
], indirect=["hub"])
def test_each_misbehaviour_names_its_cause(tmp_path: Path, hub: ThreadingHTTPServer,
                                           expected: str) -> None:
    line = _refused(tmp_path, hub, ("params",))
    assert expected in line and "check the connection" not in line


@_fault("drip")
@pytest.mark.parametrize("surface", [("params",), WEIGHT_SURFACES[0]], ids=lambda s: s[0])
def test_a_dripping_body_stops_at_the_budget(tmp_path: Path, hub: ThreadingHTTPServer,
                                             surface: tuple[str, ...]) -> None:
    line = _refused(tmp_path, hub, surface, TFCLI_HUB_TIMEOUT="3")
    assert "within the 3 s budget while fetching config.json" in line
    assert "TFCLI_HUB_TIMEOUT" in line


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_a_bad_budget_names_the_setting(tmp_path: Path, value: str) -> None:
    line = _one_line_error(_tfcli(tmp_path, "params", REPO, TFCLI_HUB_TIMEOUT=value,
                                  HF_ENDPOINT="http://127.0.0.1:9"))
    assert "TFCLI_HUB_TIMEOUT=" in line


@_fault("drip")
def test_ctrl_c_during_a_download_exits_130_and_leaves_no_partial_file(
        tmp_path: Path, hub: ThreadingHTTPServer) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    environ |= {"HF_HOME": str(tmp_path), "HF_ENDPOINT": hub.url}  # type: ignore[attr-defined]
    process = subprocess.Popen([sys.executable, "-m", "tfcli", "params", REPO], env=environ,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not any(r.startswith("GET") and "/resolve/" in r for r in hub.seen):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    time.sleep(1)  # some bytes are in the partial file
    process.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, stderr = process.communicate(timeout=15)
    assert process.returncode == 130, stderr
    assert time.monotonic() - start < 5
    assert "Traceback" not in stderr
    assert not list(tmp_path.glob("hub/*/blobs/*.incomplete"))


def test_a_good_endpoint_is_cached_by_sha_and_quiet(tmp_path: Path,
                                                    hub: ThreadingHTTPServer) -> None:
    result = _tfcli(tmp_path, "params", REPO, "--format", "json", HF_ENDPOINT=hub.url)  # type: ignore[attr-defined]
    assert result.returncode == 0 and result.stderr == "", result.stderr  # no bar on a pipe
    root = tmp_path / "hub" / "models--org--model"
    assert (root / "refs" / "main").read_text() == COMMIT
    assert (root / "snapshots" / COMMIT / "config.json").read_bytes() == CONFIG
    again = _tfcli(tmp_path, "params", REPO, "--format", "json", HF_HUB_OFFLINE="1")
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("surface", SURFACES, ids=lambda s: s[0])
@pytest.mark.parametrize("value", ["http://[::1", "ht tp://x", "http://host:99999", "://nohost",
                                   "http://", "file:///etc/passwd", "http://a\x7fb", "x" * 5000])
def test_a_malformed_endpoint_names_the_setting(tmp_path: Path, surface: tuple[str, ...],
                                                value: str) -> None:
    line = _line(_tfcli(tmp_path, surface[0], REPO, *surface[1:], HF_ENDPOINT=value), surface[0])
    assert "HF_ENDPOINT=" in line and len(line) < 300, line


BREAKAGES = {
    "dangling link": (lambda s: (s / "config.json").symlink_to(s / "nowhere"),
                      "config.json is a symlink to"),
    "link loop": (lambda s: (s / "config.json").symlink_to(s / "config.json"),
                  "config.json cannot be read"),
    "fifo": (lambda s: os.mkfifo(s / "config.json"), "config.json is a FIFO"),
    "folder": (lambda s: (s / "config.json").mkdir(), "config.json is a directory"),
}


@pytest.mark.parametrize("surface", CONFIG_SURFACES, ids=lambda s: s[0])
@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_a_broken_cached_snapshot_is_named(tmp_path: Path, surface: tuple[str, ...],
                                           breakage: str) -> None:
    snapshot = _cache(tmp_path, REPO)
    (snapshot / "config.json").unlink()
    breaking, expected = BREAKAGES[breakage]
    breaking(snapshot)
    line = _line(_tfcli(tmp_path, surface[0], REPO, *surface[1:], HF_HUB_OFFLINE="1"), surface[0])
    assert "a broken entry in the Hub cache" in line and expected in line, line
    assert "has no config.json" not in line


@pytest.mark.parametrize("content", ["", "../..", "main"])
def test_a_broken_cached_ref_is_named(tmp_path: Path, content: str) -> None:
    _cache(tmp_path, REPO)
    (tmp_path / "hub" / "models--org--model" / "refs" / "main").write_text(content)
    line = _one_line_error(_tfcli(tmp_path, "params", REPO, HF_HUB_OFFLINE="1"))
    assert "refs/main" in line and ("is empty" if not content else "not a commit sha") in line


def test_a_revision_that_climbs_is_not_a_hub_id(tmp_path: Path) -> None:
    line = _one_line_error(_tfcli(tmp_path, "params", f"{REPO}@a/../../b", HF_HUB_OFFLINE="1"))
    assert "no such file, bundled spec or Hub id" in line


@pytest.mark.parametrize("command", ["run", "generate"])
def test_weights_given_a_gguf_file_reads_it(tmp_path: Path, command: str) -> None:
    from tests.corpus.hostile_corpus import tiny_gguf

    gguf_file = tiny_gguf(tmp_path)
    spec = _tfcli(tmp_path, "import-config", str(gguf_file))
    assert spec.returncode == 0, spec.stderr
    (tmp_path / "tiny.yaml").write_text(spec.stdout)
    result = _tfcli(tmp_path, command, str(tmp_path / "tiny.yaml"), "--tokens", "1",
                    "--max-new-tokens" if command == "generate" else "--format",
                    "1" if command == "generate" else "json", "--weights", str(gguf_file))
    assert result.returncode == 0, result.stderr
    line = _one_line_error(_tfcli(tmp_path, command, "lesson-tiny", "--tokens", "1",
                                  "--weights", str(gguf_file)))
    assert "UTF-8" not in line and str(gguf_file) in line


@pytest.mark.parametrize("surface", SURFACES, ids=lambda s: s[0])
@pytest.mark.parametrize("hub", ["short-body", "hangup"], indirect=True)
def test_an_answer_that_breaks_off_is_not_a_connection_problem(
        tmp_path: Path, hub: ThreadingHTTPServer, surface: tuple[str, ...]) -> None:
    """The Hub answered (or accepted the connection) and broke off: 'cannot reach the Hub ...
    check the connection' sent the user to their network."""
    line = _refused(tmp_path, hub, surface)
    assert "broke off its answer" in line and "check the connection" not in line


@_fault("listed-exabyte-weights")
@pytest.mark.parametrize("surface", WEIGHT_SURFACES, ids=lambda s: s[0])
def test_a_checkpoint_larger_than_the_free_disk_is_not_downloaded(
        tmp_path: Path, hub: ThreadingHTTPServer, surface: tuple[str, ...]) -> None:
    line = _refused(tmp_path, hub, surface)
    assert "the checkpoint is 1,152,921,504,606,8" in line and "bytes on the Hub, more than" in line
    assert "free under" in line
    assert not [r for r in hub.seen if "model.safetensors" in r]  # type: ignore[attr-defined]

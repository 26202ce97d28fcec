"""A local stand-in for the Hub, for tests and the hostile corpus: a request handler whose
subclasses say how each request is answered (`answer`), and a server on a free port."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class HubHandler(BaseHTTPRequestHandler):
    """GET and HEAD both go to `answer`; `send` writes a body only for a GET. Quiet."""

    protocol_version = "HTTP/1.1"

    def send(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def drip(self, headers: dict[str, str], body: bytes) -> None:
        """A 200 whose body comes a byte a second (a server that never quite stops)."""
        self.send(200, headers)
        for byte in body:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(1)

    def short_body(self, headers: dict[str, str], body: bytes) -> None:
        """A 200 that promises 1 KiB more than `body`, sends `body`, then closes."""
        self.send(200, headers | {"Content-Length": str(len(body) + 1024)}, body)
        self.close_connection = True

    def answer(self) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:  # noqa: N802 (http.server's names)
        self.answer()

    def do_HEAD(self) -> None:  # noqa: N802
        self.answer()

    def log_message(self, *args: object) -> None:
        pass


def serve(handler: type[HubHandler], **attributes: Any) -> ThreadingHTTPServer:
    """A server for `handler` on a free local port, in a daemon thread; `attributes` are set on
    the server (what the handler reads as self.server.NAME), and `url` is its address. A client
    that leaves mid-answer is not reported (the corpus's clients are killed on purpose)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]
    for name, value in attributes.items():
        setattr(server, name, value)
    server.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server

"""Bait for schema references: a loopback HTTP server and a local file, each holding a secret.

A test points a ``$ref`` at them and then checks that the server received no
request and that the secret appears nowhere in what came back.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SECRET = "bait-secret-7f3a9c1e"
"""The text the bait schemas hold; finding it in an answer means something was fetched or read."""
BAIT_SCHEMA = {"type": "string", "description": SECRET, "const": SECRET}


@dataclass
class BaitServer:
    """A loopback HTTP server that answers every GET with BAIT_SCHEMA and remembers the paths asked for."""

    url: str
    requests: list[str] = field(default_factory=list)


@contextlib.contextmanager
def bait_server() -> Iterator[BaitServer]:
    """Serve BAIT_SCHEMA on 127.0.0.1 (a free port) in a thread, for the duration of the block."""
    body = json.dumps(BAIT_SCHEMA).encode()
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the test reads `requests` instead."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield BaitServer(f"http://127.0.0.1:{server.server_address[1]}/schema.json", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def bait_file(directory: Path) -> Path:
    """BAIT_SCHEMA written to a JSON file in ``directory``."""
    path = directory / "bait-schema.json"
    path.write_text(json.dumps(BAIT_SCHEMA), encoding="utf-8")
    return path

"""Loopback stand-ins for the EC2 instance metadata service, for the probe's tests.

`ImdsServer` speaks IMDSv2 the way EC2 does when IMDSv2 is required: a GET
without a token from ``PUT /latest/api/token`` is refused with 401.
`SilentServer` accepts TCP connections (the kernel completes them from the listen
backlog) but never answers, like a firewall that swallows packets.
"""
from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "AQAEAFakeImdsV2Token=="


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format, *args):  # keep pytest output clean
        pass

    def _reply(self, status: int, body: str = "") -> None:
        data = body.encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout tests): nothing to tell it
            pass

    def do_PUT(self):
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
        self.server.log.append(("PUT", self.path, ttl))
        if self.path != "/latest/api/token":
            self._reply(404, "Not Found")
        elif not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            self._reply(400, "Bad Request")
        else:
            self._reply(200, TOKEN)

    def do_GET(self):
        token = self.headers.get("X-aws-ec2-metadata-token", "")
        self.server.log.append(("GET", self.path, token))
        if token != TOKEN:
            self._reply(401, "Unauthorized")
            return
        time.sleep(self.server.get_delay)
        value = self.server.values.get(self.path)
        self._reply(200, value) if value is not None else self._reply(404, "Not Found")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    log: list
    values: dict
    get_delay: float


class ImdsServer:
    """An IMDSv2 endpoint on 127.0.0.1 (port chosen by the OS). Use as a context manager.

    Attributes:
        url: the endpoint to put in NEURONBENCH_IMDS_ENDPOINT.
        log: (method, path, ttl-or-token header) for every request, in order.
    """

    def __init__(self, instance_type: str = "inf2.xlarge", region: str = "us-east-1",
                 get_delay: float = 0.0) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.log = []
        self._server.values = {"/latest/meta-data/instance-type": instance_type,
                               "/latest/meta-data/placement/region": region}
        self._server.get_delay = get_delay
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.log = self._server.log
        # A short poll interval keeps shutdown (and so each test) quick.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="imds-server", daemon=True)

    def __enter__(self) -> ImdsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class SilentServer:
    """A listening socket on 127.0.0.1 that never accepts or answers."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> SilentServer:
        return self

    def __exit__(self, *exc) -> None:
        self._sock.close()


def closed_port_url() -> str:
    """A loopback URL on which nothing listens (the connection is refused at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"

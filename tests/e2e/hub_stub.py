"""A stand-in Hugging Face hub on 127.0.0.1: what ``hf_hub_download(repo, "config.json")`` asks of the hub.

huggingface_hub builds ``{HF_ENDPOINT}/{repo_id}/resolve/{revision}/{filename}``, sends a HEAD
(it needs ``X-Repo-Commit``, an ``ETag`` and the size) and then a GET for the bytes.  An unknown
repository gets the hub's 404 with ``X-Error-Code: RepoNotFound``.  Every request path is kept so a
test can say what the host asked for.  It listens on loopback only: no test reaches the internet.
"""
from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<file>.+)$")


class HubStub:
    def __init__(self, repos: dict[str, bytes], commit: str = "0123456789abcdef0123456789abcdef01234567") -> None:
        self.repos = repos  # repo id -> its config.json bytes
        self.commit = commit
        self.requests: list[tuple[str, str]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                stub.requests.append((self.command, self.path))
                match = RESOLVE.match(self.path.split("?")[0])
                data = stub.repos.get(match["repo"]) if match and match["file"] == "config.json" else None
                if data is None:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "RepoNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("X-Repo-Commit", stub.commit)
                self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> HubStub:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def hub_env(env: dict[str, str], stub: HubStub, hf_home: str) -> dict[str, str]:
    """``env`` for a CLI whose host fetches hub configs from ``stub`` (and from nowhere else)."""
    env = {k: v for k, v in env.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy",
                                                             "hf_hub_offline", "transformers_offline")}
    env.update(HF_ENDPOINT=stub.endpoint, HF_HOME=hf_home, HF_HUB_DISABLE_TELEMETRY="1", NO_PROXY="127.0.0.1",
               no_proxy="127.0.0.1")
    return env

"""A real `transformers serve` (this venv's transformers 5.x, [serving] extras) of the tiny random Llama whose config
ships, written to a folder by the agent (random weights, a tokenizer built offline with `tokenizers`), launched by
the agent on this computer and over the real sshd; the server is gone afterwards (/proc).  5.x serves
/v1/completions with usage in the stream; 4.56 (chat, no usage) runs in tests/e2e/test_transformers_4_56.py."""
from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

import pytest

from tests.e2e.conftest import add_host, remote_profile

pytestmark = pytest.mark.slow

FLAGS = ["--workload", "serve", "--input-lens", "8", "--output-lens", "4", "--concurrency", "1,2", "--duration",
         "0.5", "--min-iters", "3", "--json"]


def server_gone(result: dict) -> bool:
    """No process is left that runs the server's command line (transformers serve on the run's port)."""
    argv = result["serve"]["server"]["argv"]
    module, port = argv[argv.index("-m") + 1], str(argv[argv.index("--port") + 1])
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and f"{module} serve" in cmdline and f"--port {port}" in cmdline:
            return False
    return bool(result["serve"]["server"]["model_folder"])


def check(result: dict, transformers: str | None = None) -> None:
    """Every level measured, every request exactly N tokens; transformers 5.x by /v1/completions and its usage,
    4.x by chat completions and the agent's own tokenizer (4.56 streams no usage)."""
    transformers = transformers or metadata.version("transformers")
    assert result["status"] == "ok", result.get("error")
    serve = result["serve"]
    server = serve["server"]
    assert server["server"] == "transformers" and server["dialect"] == "transformers"
    assert server["transformers"] == transformers
    assert server["weights"] == "random (seed 0)" and server["parameters"] > 0
    v5 = transformers.startswith("5.")
    assert server["endpoint"].endswith("/v1/completions" if v5 else "/v1/chat/completions")
    assert server["argv"][2] == ("transformers.cli.transformers" if v5 else "transformers.commands.transformers_cli")
    assert [lv["concurrency"] for lv in serve["levels"]] == [1, 2]
    for level in serve["levels"]:
        assert level["errors"] == 0 and level["completed"] >= 3
        assert level["token_source"] == ("usage" if v5 else "tokenizer")
        assert level["output_tokens"] == 4 * level["completed"]  # every request exactly N tokens
        assert level["tpot_ms"]["n"] == level["completed"]
    assert re.search(r"/runs/[^/]+/server\.log$", server["log"])
    assert server_gone(result)


def test_the_agent_serves_the_tiny_llama_with_transformers_serve_here(run_cli):
    done = run_cli("run", "--host", "local", *FLAGS, timeout=400)
    assert done.code == 0, done.stderr
    check(json.loads(done.stdout)[0])


def test_the_agent_serves_the_tiny_llama_with_transformers_serve_over_ssh(sshd, data_dir, run_cli, ssh_env):
    add_host(data_dir, remote_profile(sshd))
    done = run_cli("run", "--host", "box", *FLAGS, "--accept-new-host-key", env=ssh_env, timeout=400)
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)[0]
    check(result)
    assert result["host"] == "box"

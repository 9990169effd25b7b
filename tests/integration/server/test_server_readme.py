"""The README's `saber serve` section runs: the server, its curl SSE example and its openai example."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from server_helpers import free_port, wait_ready

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def block(language: str, containing: str) -> str:
    return next(b for b in re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL) if containing in b)


@pytest.mark.slow
def test_readme_serve_curl_and_openai_examples(tmp_path: Path) -> None:
    commands = block("sh", "saber serve").replace("\\\n", " ").splitlines()
    serve, curl = commands[0], commands[1]
    assert serve.startswith("saber serve --port 8000") and curl.startswith("curl -N http://127.0.0.1:8000/")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env["SABER_HOME"] = str(tmp_path / "home")
    server = subprocess.Popen([sys.executable, "-m", "saber.cli", *serve.split()[1:-1], str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_ready(server, port)
        done = subprocess.run(curl.replace(":8000", f":{port}"), shell=True, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("id: 1\r\nevent: start\r\n") or done.stdout.startswith("id: 1\nevent: start\n")
        assert "event: done" in done.stdout and "东京现在是" in done.stdout  # rule answers speak the query's language

        code = block("py", "from openai import OpenAI").replace(":8000", f":{port}")
        ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, ran.stderr
        assert "东京现在是" in ran.stdout and "In New York" in ran.stdout
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=60)
    assert "Traceback" not in err
    assert re.search(r"route=/api/chat/stream status=200", err), err

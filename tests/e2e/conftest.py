"""Browser tests: Debian's chromium driven by Playwright (never a browser download) against a real
uvicorn server on loopback, the model a FakeOpenAIServer answering from a script."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "integration" / "server"))

from server_helpers import LiveServer, make_agent, settings_for

from saber.llm.openai_compat import OpenAIChatModel
from saber.testing import FakeOpenAIServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def is_planner(body: dict[str, Any]) -> bool:
    system = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system")
    return "task planner" in system or "任务规划器" in system


def is_profile(body: dict[str, Any]) -> bool:
    system = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system")
    return "remember about the user" in system or "profile of the user" in system


class ModelScript:
    """The fake model's replies by kind: the plan, the answer, and "nothing" for memory extraction."""

    def __init__(self) -> None:
        self.plan = "[]"
        self.answer: Any = "Hello from the fake model."

    def __call__(self, body: dict[str, Any]) -> Any:
        if is_profile(body):
            return "[]" if "remember" in str(body) else "{}"
        if is_planner(body):
            return self.plan
        return self.answer


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright import sync_api as playwright_sync

    if not Path(CHROMIUM).exists():
        pytest.fail(f"chromium is not installed at {CHROMIUM}: .ci/run installs Debian's chromium package")
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def script() -> ModelScript:
    return ModelScript()


@pytest.fixture
def live(tmp_path: Path, script: ModelScript) -> Iterator[Callable[..., LiveServer]]:
    """``live(tools=[...], keys=False, embedder=None)`` starts ``create_app`` on loopback with the scripted model."""
    servers: list[LiveServer] = []
    fakes: list[FakeOpenAIServer] = []

    def start(**kwargs: Any) -> LiveServer:
        fake = FakeOpenAIServer([script] * 200).start()
        fakes.append(fake)
        agent_kwargs = {k: kwargs.pop(k) for k in ("tools", "builtin", "embedder") if k in kwargs}
        settings = settings_for(tmp_path / "home", **kwargs)
        model = OpenAIChatModel(fake.model, base_url=fake.base_url, api_key="k")
        server = LiveServer(make_agent(settings, model, **agent_kwargs), settings).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    for fake in fakes:
        fake.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def wait_until(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")

"""A user's conversation history as the next request reads it: what a run wrote is there as soon
as the run's answer is out, also for a request served by another app instance on the same
database (two ``saber serve`` processes behind one load balancer share ``saber.db``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from server_helpers import LiveServer, read_sse

from saber.testing import FakeOpenAIServer

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def _ask(client: httpx.Client, route: str, message: str, headers: dict[str, str]) -> str:
    """Post ``message`` and return the answer, read to the end (the stream up to ``done``)."""
    body = {"message": message, "mode": "chat"}
    if route == "/api/chat":
        response = client.post(route, json=body, headers=headers)
        assert response.status_code == 200, response.text
        return str(response.json()["answer"])
    with client.stream("POST", route, json=body, headers=headers) as response:
        assert response.status_code == 200
        done = [e for e in read_sse(response) if e.event == "done"]
    return str(done[-1].data["answer"])


@pytest.mark.parametrize("route", ["/api/chat", "/api/chat/stream"])
def test_the_next_request_reads_the_history_a_run_wrote_on_either_instance(
    route: str, serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_llm.queue("Tulips, noted.", "Hello Bob.", "You said tulips.", "Tulips, again.")
    home = tmp_path / "shared-home"
    first, second = serve(keys=True, home=home), serve(keys=True, home=home)
    with (
        httpx.Client(base_url=first.url, timeout=60) as a,
        httpx.Client(base_url=second.url, timeout=60) as b,
    ):
        assert _ask(a, route, "My favourite flower is the tulip.", ALICE) == "Tulips, noted."
        assert _ask(b, route, "Hi, I am Bob.", BOB) == "Hello Bob."
        assert _ask(b, route, "Which flower did I name?", ALICE) == "You said tulips."
        assert _ask(a, route, "And once more?", ALICE) == "Tulips, again."
    sent = [
        [(m["role"], m["content"]) for m in r.body["messages"] if m["role"] != "system"]
        for r in fake_llm.chat_requests
    ]
    first_turn = [("user", "My favourite flower is the tulip."), ("assistant", "Tulips, noted.")]
    assert sent[0] == first_turn[:1]
    assert sent[1] == [("user", "Hi, I am Bob.")], "another user's history is not hers"
    assert sent[2] == [*first_turn, ("user", "Which flower did I name?")], (
        "the other instance read her first turn"
    )
    assert sent[3] == [
        *first_turn,
        ("user", "Which flower did I name?"),
        ("assistant", "You said tulips."),
        ("user", "And once more?"),
    ], "and the first instance her turn on the second"

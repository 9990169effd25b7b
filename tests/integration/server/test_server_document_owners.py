"""A server with API keys: each user's searches, listings and reads see the shared documents
(``saber ingest``) and their own, never another user's; what the agent writes for a user is theirs."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import httpx
from server_helpers import LiveServer

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def upload(live: LiveServer, headers: dict[str, str], name: str, text: str) -> str:
    r = httpx.post(live.url + "/api/documents", headers=headers, files={"files": (name, text.encode(), "text/markdown")},
                   timeout=60)
    assert r.status_code == 200, r.text
    return str(r.json()["files"][0]["document"]["id"])


def rag(live: LiveServer, headers: dict[str, str], message: str) -> dict[str, Any]:
    r = httpx.post(live.url + "/api/chat", headers=headers, json={"message": message, "mode": "rag"}, timeout=60)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def found(body: dict[str, Any]) -> set[str]:
    return {hit["document_id"] for e in body["events"] if e["type"] == "rag_result" for hit in e["data"]["hits"]}


def test_one_users_documents_never_reach_another_users_search(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True, model=False)
    zebras = upload(live, ALICE, "zebras.md", "# Zebra feeding\n\nThe zebras in the north paddock are fed at 7 am.\n")
    otters = upload(live, BOB, "otters.md", "# Otter feeding\n\nThe otters by the north pond are fed at 9 am.\n")
    engine = live.agent.services.knowledge
    assert engine is not None
    shared = engine.ingest_text("Feeding handbook", "Every animal in the north enclosures is fed twice a day.",
                                source="handbook.md", wait=True).document.id

    for_bob = rag(live, BOB, "when are the animals in the north fed?")
    assert zebras not in found(for_bob) and "paddock" not in for_bob["answer"]
    assert {otters, shared} <= found(for_bob)
    for_alice = rag(live, ALICE, "when are the animals in the north fed?")
    assert otters not in found(for_alice) and {zebras, shared} <= found(for_alice)

    listed = {d["id"]: (d["shared"], d["deletable"]) for d in httpx.get(live.url + "/api/documents", headers=BOB).json()}
    assert listed == {otters: (False, True), shared: (True, False)}  # what Bob's searches see, no more
    assert httpx.get(f"{live.url}/api/documents/{zebras}", headers=BOB).status_code == 404
    assert httpx.get(f"{live.url}/api/documents/{shared}", headers=BOB).json()["text"].startswith("Every animal")
    assert httpx.delete(f"{live.url}/api/documents/{zebras}", headers=BOB).status_code == 404
    assert httpx.delete(f"{live.url}/api/documents/nope", headers=BOB).status_code == 404
    refused = httpx.delete(f"{live.url}/api/documents/{shared}", headers=BOB)
    assert refused.status_code == 403 and "admin" in refused.json()["error"]["message"]
    assert httpx.delete(f"{live.url}/api/documents/{otters}", headers=BOB).json() == {"deleted": True}
    assert otters not in {d.id for d in engine.list_documents(hidden=())}
    assert shared in {d.id for d in engine.list_documents(hidden=())}


def test_an_admin_deletes_a_shared_document_and_a_keyless_server_is_its_operators(
        serve: Callable[..., LiveServer], tmp_path: Any) -> None:
    live = serve(keys=True, model=False, server={"admins": ["alice"]})
    engine = live.agent.services.knowledge
    assert engine is not None
    shared = engine.ingest_text("Handbook", "Feed twice a day.", source="handbook.md", wait=True).document.id
    [row] = httpx.get(live.url + "/api/documents", headers=ALICE).json()
    assert (row["id"], row["shared"], row["deletable"]) == (shared, True, True)
    assert httpx.delete(f"{live.url}/api/documents/{shared}", headers=ALICE).json() == {"deleted": True}
    assert engine.list_documents(hidden=()) == []
    assert httpx.delete(f"{live.url}/api/documents/{shared}", headers=ALICE).status_code == 404
    live.stop()

    local = serve(model=False, home=tmp_path / "local")  # no keys: one local user, the operator
    engine = local.agent.services.knowledge
    assert engine is not None
    shared = engine.ingest_text("Handbook", "Feed twice a day.", source="handbook.md", wait=True).document.id
    [row] = httpx.get(local.url + "/api/documents").json()
    assert (row["id"], row["shared"], row["deletable"]) == (shared, True, True)
    assert httpx.delete(f"{local.url}/api/documents/{shared}").json() == {"deleted": True}
    assert httpx.get(local.url + "/api/documents").json() == []


def test_owners_kept_by_an_earlier_version_in_server_db_are_moved_into_the_knowledge_base(
        serve: Callable[..., LiveServer], tmp_path: Any) -> None:
    home = tmp_path / "legacy"
    first = serve(keys=True, model=False, home=home)
    engine = first.agent.services.knowledge
    assert engine is not None
    doc = engine.ingest_text("Old upload", "Uploaded before owners moved.", source="old.md", wait=True).document.id
    first.stop()
    db = sqlite3.connect(str(home / "server.db"))
    with db:
        db.execute("CREATE TABLE document_owners (document_id TEXT NOT NULL, user_id TEXT NOT NULL,"
                   " PRIMARY KEY (document_id, user_id))")
        db.execute("INSERT INTO document_owners VALUES (?, 'alice')", (doc,))
    db.close()

    live = serve(keys=True, model=False, home=home)
    assert [(d["id"], d["shared"]) for d in httpx.get(live.url + "/api/documents", headers=ALICE).json()] == [(doc, False)]
    assert httpx.get(live.url + "/api/documents", headers=BOB).json() == []
    db = sqlite3.connect(str(home / "server.db"))
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'document_owners'").fetchall() == []
    db.close()


def test_uploading_the_text_of_a_shared_document_leaves_it_shared(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True, model=False)
    engine = live.agent.services.knowledge
    assert engine is not None
    text = "# Feeding handbook\n\nEvery animal in the north enclosures is fed twice a day.\n"
    shared = engine.ingest_text("Feeding handbook", text, source="handbook.md", wait=True).document.id
    r = httpx.post(live.url + "/api/documents", headers=ALICE, files={"files": ("copy.md", text.encode(), "text/markdown")},
                   timeout=60)
    assert r.status_code == 200 and r.json()["files"][0]["status"] == "unchanged", r.text
    document = r.json()["files"][0]["document"]
    assert (document["id"], document["shared"], document["deletable"]) == (shared, True, False)
    assert shared in found(rag(live, BOB, "how often are the animals in the north fed?"))


def post(live: LiveServer, headers: dict[str, str], name: str, text: str) -> dict[str, Any]:
    """Upload one file; its result (``status`` and ``document``)."""
    r = httpx.post(live.url + "/api/documents", headers=headers, files={"files": (name, text.encode(), "text/markdown")},
                   timeout=60)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["files"][0]
    return result


def listed(live: LiveServer, headers: dict[str, str]) -> dict[str, str]:
    """The caller's list: id → file name shown."""
    return {d["id"]: d["source"] for d in httpx.get(live.url + "/api/documents", headers=headers).json()}


def test_the_same_bytes_from_two_users_are_two_documents_and_stay_two(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True, model=False)
    text = "# Paddock rota\n\nThe zebras in the north paddock are fed at 7 am by the keepers.\n"
    mine = post(live, ALICE, "alice.md", text)
    theirs = post(live, BOB, "bob.md", text)  # the very bytes Alice uploaded privately
    assert (mine["status"], theirs["status"]) == ("added", "added")
    alice, bob = mine["document"]["id"], theirs["document"]["id"]
    assert bob != alice and (theirs["document"]["source"], theirs["document"]["shared"]) == ("bob.md", False)
    assert listed(live, BOB) == {bob: "bob.md"} and listed(live, ALICE) == {alice: "alice.md"}
    assert httpx.get(f"{live.url}/api/documents/{alice}", headers=BOB).status_code == 404
    engine = live.agent.services.knowledge
    assert engine is not None and engine.owned_by("alice") == {alice} and engine.owned_by("bob") == {bob}

    for headers, name, own in ((ALICE, "alice.md", alice), (BOB, "bob.md", bob), (BOB, "copy.md", bob)):
        again = post(live, headers, name, text)  # a user's own text again: their own document, unchanged
        assert (again["status"], again["document"]["id"]) == ("unchanged", own)

    update = "# Paddock rota\n\nFrom Monday the zebras are fed at 8 am, and the okapi at noon.\n"
    updated = post(live, ALICE, "alice.md", update)
    assert (updated["status"], updated["document"]["id"]) == ("updated", alice)
    assert listed(live, BOB) == {bob: "bob.md"}
    assert httpx.get(f"{live.url}/api/documents/{bob}", headers=BOB).json()["text"] == text.strip("\n")
    for_bob = rag(live, BOB, "when is the okapi fed?")
    assert alice not in found(for_bob) and "okapi at noon" not in for_bob["answer"]
    assert alice in found(rag(live, ALICE, "when is the okapi fed?"))


def test_a_document_stored_before_owners_keyed_the_hash_is_still_its_owners_alone(
        serve: Callable[..., LiveServer]) -> None:
    from saber.server.routes.documents import upload_source

    live = serve(keys=True, model=False)
    engine = live.agent.services.knowledge
    assert engine is not None
    text = "# Old rota\n\nThe otters by the north pond were fed at 9 am.\n"
    old = engine.ingest_text("Old rota", text, source=upload_source("alice", "old.md")).document.id  # as stored then:
    engine.add_owner(old, "alice")  # the plain content hash, the owner beside it
    again = post(live, ALICE, "old.md", text)
    assert (again["status"], again["document"]["id"]) == ("unchanged", old)
    theirs = post(live, BOB, "otters.md", text)
    assert theirs["status"] == "added" and theirs["document"]["id"] != old
    assert listed(live, BOB) == {theirs["document"]["id"]: "otters.md"} and listed(live, ALICE) == {old: "old.md"}

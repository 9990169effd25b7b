"""The same store tests on SQLite and PostgreSQL: history, preferences, memories, isolation."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from saber.agent.memory import MemoryService
from saber.agent.memory.postgres_store import PostgresMemoryStore
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.agent.memory.store import MemoryStore, MemoryStoreError, NewMemory, normalise_text
from saber.rag.embedder import Embedder


def _new(text: str, *, importance: float = 0.5, now: float = 100.0, seed: int = 0) -> NewMemory:
    vector = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return NewMemory(
        text=text, norm=normalise_text(text), importance=importance, source="rules",
        embedder="test", vector=vector / np.linalg.norm(vector), now=now,
    )


def test_history_window_and_order(store: MemoryStore) -> None:
    for i in range(7):
        store.append_history("u1", "user" if i % 2 == 0 else "assistant", f"m{i}", keep=4, now=float(i))
    recent = store.recent_history("u1", 10)
    assert [e.content for e in recent] == ["m3", "m4", "m5", "m6"]
    assert [e.role for e in recent] == ["assistant", "user", "assistant", "user"]
    assert [e.created_at for e in recent] == [3.0, 4.0, 5.0, 6.0]
    assert [e.content for e in store.recent_history("u1", 2)] == ["m5", "m6"]
    assert store.recent_history("u1", 0) == []
    store.clear_history("u1")
    assert store.recent_history("u1", 10) == []


def test_history_keeps_unicode_and_long_text(store: MemoryStore) -> None:
    text = "你好 👋 " + "x" * 10_000 + " ' \" ; DROP TABLE mem_history; --"
    store.append_history("u1", "user", text, keep=5, now=1.0)
    assert store.recent_history("u1", 1)[0].content == text


def test_a_nul_in_stored_text_is_dropped_on_both_stores(store: MemoryStore) -> None:
    """PostgreSQL refuses NUL in text; an answer that quotes a binary tool result must still be kept."""
    store.append_history("u1", "assistant", "before\x00after", keep=5, now=1.0)
    assert store.recent_history("u1", 1)[0].content == "beforeafter"


def test_preferences_upsert_and_delete(store: MemoryStore) -> None:
    store.set_preferences("u1", {"city": "北京", "name": "张三"}, now=1.0)
    store.set_preferences("u1", {"city": "上海"}, now=2.0)
    assert store.get_preferences("u1") == {"city": "上海", "name": "张三"}
    assert store.delete_preference("u1", "name")
    assert not store.delete_preference("u1", "name")
    assert store.get_preferences("u1") == {"city": "上海"}


def test_memory_insert_merge_touch_delete(store: MemoryStore) -> None:
    first, merged = store.insert_memory("u1", _new("I like tea", importance=0.6))
    assert not merged and first.uses == 1 and first.importance == pytest.approx(0.6)
    np.testing.assert_allclose(first.vector, _new("I like tea").vector)
    again, merged = store.insert_memory("u1", _new("i like TEA.", importance=0.3, now=200.0))
    assert merged and again.id == first.id
    assert again.text == "i like TEA." and again.uses == 2 and again.last_used_at == 200.0
    assert again.importance == pytest.approx(0.7)
    assert again.created_at == 100.0
    reworded = store.merge_memory("u1", first.id, _new("I love tea", importance=0.9, now=300.0, seed=1))
    assert reworded is not None and reworded.text == "I love tea"
    assert reworded.importance == pytest.approx(1.0)
    np.testing.assert_allclose(reworded.vector, _new("x", seed=1).vector)
    assert store.merge_memory("u1", 999_999, _new("nothing")) is None
    store.touch_memories("u1", [first.id], now=400.0)
    [record] = store.list_memories("u1")
    assert record.last_used_at == 400.0 and record.uses == 4
    store.update_vectors("u1", {first.id: np.ones(3, dtype=np.float32)}, "other")
    [record] = store.list_memories("u1")
    assert record.embedder == "other" and record.vector.tolist() == [1.0, 1.0, 1.0]
    assert store.delete_memory("u1", first.id)
    assert not store.delete_memory("u1", first.id)
    assert store.list_memories("u1") == []


def test_merge_into_a_text_another_memory_holds_keeps_both_rows_valid(store: MemoryStore) -> None:
    tea, _ = store.insert_memory("u1", _new("I like tea"))
    coffee, _ = store.insert_memory("u1", _new("I like coffee"))
    merged = store.merge_memory("u1", coffee.id, _new("I like tea", importance=0.5))
    assert merged is not None and merged.text == "I like coffee"  # wording kept: no duplicate norms
    assert sorted(r.text for r in store.list_memories("u1")) == ["I like coffee", "I like tea"]
    assert tea.id != coffee.id


def test_every_method_is_scoped_to_one_user(store: MemoryStore) -> None:
    for user in ("alice", "bob"):
        store.append_history(user, "user", "same words", keep=10, now=1.0)
        store.set_preferences(user, {"city": "Paris"}, now=1.0)
        store.insert_memory(user, _new("same fact"))
    [bob_memory] = store.list_memories("bob")
    # alice cannot reach bob's rows by id
    assert not store.delete_memory("alice", bob_memory.id)
    assert store.merge_memory("alice", bob_memory.id, _new("hijack")) is None
    store.touch_memories("alice", [bob_memory.id], now=999.0)
    store.update_vectors("alice", {bob_memory.id: np.zeros(8, dtype=np.float32)}, "x")
    [unchanged] = store.list_memories("bob")
    assert unchanged.last_used_at == bob_memory.last_used_at and unchanged.embedder == "test"
    store.forget_user("alice")
    assert store.recent_history("alice", 10) == [] and store.get_preferences("alice") == {}
    assert store.list_memories("alice") == []
    assert [e.content for e in store.recent_history("bob", 10)] == ["same words"]
    assert store.get_preferences("bob") == {"city": "Paris"}
    assert [m.text for m in store.list_memories("bob")] == ["same fact"]


def test_threads_share_one_store(store: MemoryStore) -> None:
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        for j in range(10):
            store.append_history(f"user{i % 2}", "user", f"{i}-{j}", keep=1000, now=float(j))
        store.insert_memory(f"user{i % 2}", _new("shared fact"))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, range(8)))
    for user in ("user0", "user1"):
        assert len(store.recent_history(user, 1000)) == 40
        [memory] = store.list_memories(user)
        assert memory.uses == 4


def test_bad_arguments_are_refused(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match="role"):
        store.append_history("u1", "robot", "x", keep=3, now=1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep"):
        store.append_history("u1", "user", "x", keep=0, now=1.0)
    with pytest.raises(ValueError, match="user_id"):
        store.get_preferences("")


def test_two_sqlite_connections_to_one_file(tmp_path: Path) -> None:
    """Other modules open their own connections to saber.db: concurrent writers wait, not fail."""
    a = SQLiteMemoryStore(tmp_path / "saber.db")
    b = SQLiteMemoryStore(tmp_path / "saber.db")
    try:
        barrier = threading.Barrier(2)

        def write(store: SQLiteMemoryStore, user: str) -> None:
            barrier.wait()
            for i in range(50):
                store.append_history(user, "user", str(i), keep=100, now=float(i))

        threads = [threading.Thread(target=write, args=(s, u)) for s, u in ((a, "x"), (b, "y"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(b.recent_history("x", 100)) == 50
        assert len(a.recent_history("y", 100)) == 50
    finally:
        a.close()
        b.close()


def test_unusable_locations_raise_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(MemoryStoreError, match="cannot open the memory database"):
        SQLiteMemoryStore(blocker / "saber.db")
    not_a_db = tmp_path / "junk.db"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(MemoryStoreError, match="junk.db"):
        SQLiteMemoryStore(not_a_db)


@pytest.mark.postgres
def test_unreachable_postgres_raises_a_clear_error_without_the_password() -> None:
    with pytest.raises(MemoryStoreError) as info:
        PostgresMemoryStore("postgresql://me:topsecret@127.0.0.1:1/nothing", connect_timeout=2)
    assert "cannot connect" in str(info.value)
    assert "topsecret" not in str(info.value)


@pytest.mark.postgres
def test_postgres_reconnects_after_the_connection_drops(postgres_url: str) -> None:
    import psycopg

    store = PostgresMemoryStore(postgres_url)
    try:
        store.set_preferences("u1", {"city": "Paris"}, now=1.0)
        name = postgres_url.rsplit("/", 1)[1]
        with psycopg.connect(postgres_url, autocommit=True) as admin:  # kill every pooled connection
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            ).fetchall()
        assert killed
        assert store.get_preferences("u1") == {"city": "Paris"}  # the pool replaces the dead connection
    finally:
        store.close()


@pytest.mark.postgres
def test_two_postgres_stores_create_the_schema_at_once(postgres_url: str) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        stores = list(pool.map(lambda _: PostgresMemoryStore(postgres_url), range(3)))
    try:
        stores[0].set_preferences("u1", {"name": "Ann"}, now=1.0)
        assert stores[2].get_preferences("u1") == {"name": "Ann"}
    finally:
        for s in stores:
            s.close()


async def test_service_end_to_end_with_two_users(store: MemoryStore, embedder: Embedder) -> None:
    service = MemoryService(store, embedder, history_window=4)
    for user in ("alice", "bob"):
        await service.append_history(user, "user", "我叫小明，我喜欢喝茶")
        await service.update_preferences(user, "我叫小明，住在北京")
        results = await service.remember_turn(user, "我喜欢喝茶。记住我的密码是abc12345")
        assert [(r.action, r.reason) for r in results] == [("stored", ""), ("rejected", "looks like a password")]
    assert [r.action for r in await service.remember_turn("bob", "我很喜欢喝茶")] == ["merged"]
    await service.update_preferences("alice", "I live in Paris")
    assert await service.preferences("alice") == {"name": "小明", "city": "Paris"}
    assert await service.preferences("bob") == {"name": "小明", "city": "北京"}
    [alice_hit] = await service.recall("alice", "我喜欢什么饮料", k=1)
    [bob_hit] = await service.recall("bob", "我喜欢什么饮料", k=1)
    assert alice_hit.record.user_id == "alice" and alice_hit.text == "我喜欢喝茶"
    assert bob_hit.record.user_id == "bob" and bob_hit.text == "我很喜欢喝茶"
    await service.forget_user("bob")
    assert await service.history("bob") == [] and await service.memories("bob") == []
    assert [m.content for m in await service.history("alice")] == ["我叫小明，我喜欢喝茶"]

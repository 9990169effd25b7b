"""The one JSON encoding: what JSON lacks becomes plain data, never a repr."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import math
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from saber.events import Done, ToolCallEvent
from saber.jsonsafe import dumps, to_jsonable


class Colour(enum.Enum):
    RED = "red"


class Point(BaseModel):
    x: int
    when: dt.date


@dataclasses.dataclass
class Box:
    size: int
    tags: set[str]


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque secret=sk-12345>"


def test_values_json_lacks_become_plain_data() -> None:
    value = {
        "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "day": dt.date(2026, 1, 2), "span": dt.timedelta(minutes=1),
        "text": "北京".encode(), "blob": b"\xff\x00", "colour": Colour.RED, "point": Point(x=1, when=dt.date(2026, 1, 2)),
        "box": Box(size=2, tags={"b", "a"}), "tuple": (1, 2), "path": Path("/tmp/x"), "id": uuid.UUID(int=1),
        "money": Decimal("1.5"), "nan": math.nan, "inf": -math.inf, "array": np.array([1.5, 2.0]), "int64": np.int64(7),
        "error": ValueError("bad city"), 3: "int key",
    }
    out = json.loads(dumps(value))
    assert out == {
        "when": "2026-01-02T03:04:05+00:00", "day": "2026-01-02", "span": 60.0, "text": "北京", "blob": {"base64": "/wA="},
        "colour": "red", "point": {"x": 1, "when": "2026-01-02"}, "box": {"size": 2, "tags": ["a", "b"]},
        "tuple": [1, 2], "path": "/tmp/x", "id": "00000000-0000-0000-0000-000000000001", "money": 1.5, "nan": None,
        "inf": None, "array": [1.5, 2.0], "int64": 7, "error": {"error": "ValueError", "message": "bad city"},
        "3": "int key",
    }


def test_unknown_objects_are_named_never_repr_d_and_cycles_are_cut() -> None:
    assert to_jsonable(Opaque()) == {"type": f"{__name__}.Opaque"}
    assert "sk-12345" not in dumps({"x": Opaque()})
    loop: list[Any] = [1]
    loop.append(loop)
    assert to_jsonable(loop) == [1, "<cycle>"]
    deep: list[Any] = []
    cur = deep
    for _ in range(200):
        cur.append([])
        cur = cur[0]
    assert "<too deep>" in dumps(deep)


def test_events_keep_their_shape() -> None:
    event = ToolCallEvent(tool_name="t", params={"at": dt.date(2026, 1, 1)}, tool_result=Opaque())
    assert json.loads(dumps(event)) == {"type": "tool_call", "data": {
        "tool_name": "t", "params": {"at": "2026-01-01"}, "tool_result": {"type": f"{__name__}.Opaque"}, "error": None,
        "duration_ms": 0.0}}
    assert json.loads(dumps(Done(answer="好", mode="chat", task_id="t").data))["answer"] == "好"

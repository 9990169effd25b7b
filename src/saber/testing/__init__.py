"""Test helpers shipped with Saber: a scripted model and a fake OpenAI-compatible server."""

from saber.testing.events import event_kinds
from saber.testing.fake_openai import FakeOpenAIServer, FakeReply, RecordedRequest, fake_embedding
from saber.testing.scripted import RecordedCall, ScriptedModel

__all__ = [
    "FakeOpenAIServer", "FakeReply", "RecordedCall", "RecordedRequest", "ScriptedModel", "event_kinds", "fake_embedding",
]

"""Test helpers shipped with Saber: a scripted model (and a fake OpenAI-compatible server)."""

from saber.testing.scripted import RecordedCall, ScriptedModel

__all__ = ["RecordedCall", "ScriptedModel"]

"""``tools.modules``: custom tools every process registers, and a clear error when one cannot be imported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from saber.agent import Agent
from saber.config import ConfigError, Settings
from saber.testing import ScriptedModel
from saber.tools.modules import configured_tools


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "team_tools.py").write_text(
        "from saber.tools import tool\n\n"
        "@tool\ndef shout(text: str) -> str:\n    '''Say it louder.'''\n    return text.upper()\n\n"
        "NOT_A_TOOL = 3\n", encoding="utf-8")
    (tmp_path / "no_tools.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "broken_tools.py").write_text("import does_not_exist_anywhere\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("team_tools", "no_tools", "broken_tools"):
        sys.modules.pop(name, None)


def test_a_module_s_tools_are_registered_by_every_agent(module_dir: Path, tmp_path: Path) -> None:
    assert [t.name for t in configured_tools(["team_tools"])] == ["shout"]
    settings = Settings(home=tmp_path / "home", tools={"modules": ["team_tools"]}, search={"backend": "none"})
    agent = Agent(settings, model=ScriptedModel([]), builtin=False)
    assert "shout" in agent.registry.snapshot()


@pytest.mark.parametrize(("name", "message"), [
    ("broken_tools", r"tools.modules: cannot import 'broken_tools': ModuleNotFoundError: No module named 'does_not_exist_anywhere'"),
    ("nowhere.to.be.found", r"tools.modules: cannot import 'nowhere.to.be.found': ModuleNotFoundError"),
    ("no_tools", r"tools.modules: module 'no_tools' defines no @tool function"),
])
def test_a_module_that_cannot_be_used_is_one_clear_error(module_dir: Path, name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        configured_tools([name])


def test_the_setting_reads_a_comma_list_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SABER_TOOLS_MODULES", "a.b, c")
    assert Settings(home=tmp_path).tools.modules == ["a.b", "c"]
    monkeypatch.setenv("SABER_TOOLS_MODULES", '["x.y"]')
    assert Settings(home=tmp_path).tools.modules == ["x.y"]

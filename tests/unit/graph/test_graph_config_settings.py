"""``GraphConfig`` is the graph section of ``Settings`` (one set of defaults, one unit: seconds); old
names (``max_retries``, ``*_ms``, ``graph_max_retries``) keep working."""

# codemod_settings: keep (the old flat spellings are what these tests exercise)
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from saber.config import Settings
from saber.graph import GraphConfig


def test_default_settings_give_the_default_graph_config(tmp_path: Path) -> None:
    assert GraphConfig.from_settings(Settings(home=tmp_path)) == GraphConfig()


def test_every_graph_setting_reaches_the_config_in_seconds(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, graph={"max_parallel": 2, "max_attempts": 5, "retry_delay": 0.5,
                                              "step_timeout": 7.5, "sub_agent_timeout": 70, "enable_racing": False,
                                              "race_timeout": 12, "hedge": 0.25, "on_failure": "continue",
                                              "max_replan": 2, "max_result_chars": 999})
    config = GraphConfig.from_settings(settings, max_replan=0)
    assert config == GraphConfig(max_parallel=2, max_attempts=5, retry_delay=0.5, step_timeout=7.5,
                                 sub_agent_timeout=70, enable_racing=False, race_timeout=12, hedge=0.25,
                                 on_failure="continue", max_replan=0, max_result_chars=999)
    assert config.timeout_for("sub_agent") == 70 and config.timeout_for("tool") == 7.5


def test_old_graph_config_names_still_work_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match="max_retries, step_timeout_ms, hedge_ms"):
        config = GraphConfig(max_retries=0, step_timeout_ms=1500, hedge_ms=20)
    assert (config.max_attempts, config.step_timeout, config.hedge) == (1, 1.5, 0.02)
    with pytest.warns(DeprecationWarning, match="max_attempts"):
        assert config.max_retries == 1
    with pytest.raises(TypeError, match="unknown setting.*stepp_timeout"):
        GraphConfig(stepp_timeout=1)  # type: ignore[call-arg]


def test_a_checkpoint_stored_with_the_old_names_loads() -> None:
    old = {"max_parallel": 4, "max_retries": 2, "retry_delay_ms": 200.0, "retry_max_delay_ms": 5000.0,
           "step_timeout_ms": 5000.0, "sub_agent_timeout_ms": 120000.0, "race_timeout_ms": 30000.0,
           "hedge_ms": None, "max_replan": 2}
    config = GraphConfig.from_dict(old)
    assert (config.max_attempts, config.retry_delay, config.step_timeout, config.sub_agent_timeout,
            config.race_timeout, config.hedge) == (2, 0.2, 5.0, 120.0, 30.0, None)
    assert GraphConfig.from_dict(config.to_dict()) == config
    assert dataclasses.replace(config, max_attempts=4).max_attempts == 4


def test_the_old_setting_name_works_from_keyword_env_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "saber.config")
    with pytest.warns(DeprecationWarning, match=r"Settings\(graph_max_retries=\.\.\.\) is deprecated"):
        assert Settings(home=tmp_path, graph_max_retries=4).graph.max_attempts == 4
    (tmp_path / "saber.toml").write_text("[graph]\nmax_retries = 2\n", encoding="utf-8")
    assert Settings(home=tmp_path).graph.max_attempts == 2
    assert "[graph] max_retries is deprecated: write [graph] max_attempts" in caplog.text
    (tmp_path / "saber.toml").write_text("[graph]\nmax_attempts = 6\n", encoding="utf-8")
    assert Settings(home=tmp_path).graph.max_attempts == 6
    monkeypatch.setenv("SABER_GRAPH_MAX_RETRIES", "7")
    (tmp_path / "saber.toml").unlink()
    assert Settings(home=tmp_path).graph.max_attempts == 7
    monkeypatch.setenv("SABER_GRAPH_MAX_ATTEMPTS", "8")
    assert Settings(home=tmp_path).graph.max_attempts == 8


def test_settings_reject_a_negative_timeout(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"graph\.step_timeout\n.*greater than or equal to 0"):
        Settings(home=tmp_path, graph={"step_timeout": -1})
    with pytest.raises(ValueError, match="step_timeout must not be negative"):
        GraphConfig(step_timeout=-1)  # built by hand: checked the same

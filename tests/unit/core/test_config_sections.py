"""Settings in sections: ``[llm] model`` in saber.toml, ``SABER_LLM_MODEL`` and
``Settings(llm={"model": ...})`` are ``settings.llm.model``; the flat names of 0.2 still work, with
a warning naming the new spelling, once."""

# codemod_settings: keep (the old flat spellings are what these tests exercise)
from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.config import ConfigError, GraphConfig, Settings
from saber.config import sources as config_sources
from saber.config.names import FLAT_NAMES, OLD_VARIABLES, SECTIONS, section_keys, variable
from saber.redact import redact


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    for key in list(os.environ):
        if key.upper().startswith("SABER_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("SABER_HOME", str(tmp_path))
    config_sources._warned.clear()  # each test sees its own first warning
    yield tmp_path
    config_sources._warned.clear()


def write(home: Path, text: str) -> None:
    (home / "saber.toml").write_text(text, encoding="utf-8")


@pytest.mark.parametrize("spelling", ["table", "flat key", "variable", "section argument", "flat argument"])
def test_every_spelling_sets_the_same_setting(home: Path, monkeypatch: pytest.MonkeyPatch, spelling: str) -> None:
    arguments: dict[str, object] = {}
    if spelling == "table":
        write(home, '[llm]\nmodel = "m"\n[tools]\ntimeout = 4\n')
    elif spelling == "flat key":
        write(home, 'llm_model = "m"\ntool_timeout = 4\n')
    elif spelling == "variable":
        monkeypatch.setenv("SABER_LLM_MODEL", "m")
        monkeypatch.setenv("SABER_TOOL_TIMEOUT", "4")
    elif spelling == "section argument":
        arguments = {"llm": {"model": "m"}, "tools": {"timeout": 4}}
    else:
        arguments = {"llm_model": "m", "tool_timeout": 4}
    with pytest.warns(DeprecationWarning) if spelling == "flat argument" else contextlib.nullcontext():
        settings = Settings.load(**arguments)
    assert (settings.llm.model, settings.tools.timeout) == ("m", 4.0)


def test_the_file_then_variables_then_arguments_each_key_on_its_own(home: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    write(home, '[graph]\nmax_parallel = 3\nstep_timeout = 9\nretry_delay = 1\n')
    monkeypatch.setenv("SABER_GRAPH_STEP_TIMEOUT", "5")
    settings = Settings.load(graph={"retry_delay": 0.5})
    assert (settings.graph.max_parallel, settings.graph.step_timeout, settings.graph.retry_delay) == (3, 5.0, 0.5)
    assert Settings(graph=GraphConfig(max_parallel=2)).graph == GraphConfig(max_parallel=2)  # an object: the whole section


def test_a_new_spelling_wins_over_an_old_one_in_the_same_place(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(home, '[tools]\ntimeout = 2\n[tool]\ntimeout = 3\n')
    assert Settings.load().tools.timeout == 2.0
    monkeypatch.setenv("SABER_TOOL_TIMEOUT", "6")
    monkeypatch.setenv("SABER_TOOLS_TIMEOUT", "7")
    assert Settings.load().tools.timeout == 7.0
    monkeypatch.delenv("SABER_TOOLS_TIMEOUT")
    assert Settings.load().tools.timeout == 6.0


def test_an_old_spelling_in_the_file_is_warned_about_once_naming_the_new_one(
        home: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "saber.config")
    write(home, 'llm_model = "m"\n[graph]\nmax_retries = 4\n')
    for _ in range(3):
        settings = Settings.load()
    assert (settings.llm.model, settings.graph.max_attempts) == ("m", 4)
    # as a log line reads once redaction is on (another test of this process may have installed it:
    # a temporary path with digits and 32 characters in a row reads as a token)
    messages = [redact(r.getMessage()) for r in caplog.records]
    assert messages.count(redact(f"{home / 'saber.toml'}: llm_model is deprecated: write [llm] model")) == 1
    assert messages.count(redact(f"{home / 'saber.toml'}: [graph] max_retries is deprecated: write [graph] max_attempts")) == 1
    assert len(messages) == 2


def test_an_old_variable_is_warned_about_once_naming_the_new_one(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "saber.config")
    monkeypatch.setenv("SABER_DEFAULT_TIMEZONE", "UTC")
    monkeypatch.setenv("SABER_LLM_MODEL", "m")  # the same name as before: no warning
    assert Settings.load().tools.default_timezone == "UTC"
    assert Settings.load().tools.default_timezone == "UTC"
    assert [r.getMessage() for r in caplog.records] == [
        "SABER_DEFAULT_TIMEZONE is deprecated: use SABER_TOOLS_DEFAULT_TIMEZONE ([tools] default_timezone in saber.toml)"]


def test_flat_python_names_are_deprecation_warnings(home: Path) -> None:
    with pytest.warns(DeprecationWarning, match=r"Settings\(llm_model=\.\.\.\) is deprecated: use Settings\(llm="):
        settings = Settings(llm_model="m")
    with pytest.warns(DeprecationWarning, match="settings.llm_model is deprecated: use settings.llm.model"):
        assert settings.llm_model == "m"  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="max_tool_result_chars"):
        assert Settings.model_validate({"max_tool_result_chars": 10}).graph.max_result_chars == 10
    with pytest.raises(AttributeError):
        _ = settings.not_a_setting  # type: ignore[attr-defined]


def test_an_unknown_key_in_a_section_is_named(home: Path) -> None:
    write(home, '[graph]\nmax_paralel = 3\n[llm]\nmodel = "m"\n[nosuch]\nkey = 1\n')
    with pytest.raises(ConfigError, match=r"saber\.toml: unknown setting\(s\): graph\.max_paralel, nosuch\.key$"):
        Settings.load()
    (home / "saber.toml").unlink()
    with pytest.raises(ConfigError, match=r"invalid settings: llm\.modle: Extra inputs are not permitted"):
        Settings.load(llm={"modle": "m"})
    with pytest.raises(ConfigError, match=r"invalid settings: graph\.max_paralel: Unexpected keyword argument"):
        Settings.load(graph={"max_paralel": 3})


def test_a_bad_value_is_named_as_it_was_written(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = home / "saber.toml"
    write(home, '[llm]\ntemperature = 9\n')
    with pytest.raises(ConfigError, match=rf"^invalid settings: {path}: \[llm\] temperature: Input should be less"):
        Settings.load()
    write(home, 'max_tool_result_chars = 0\n')
    with pytest.raises(ConfigError, match=rf"^invalid settings: {path}: max_tool_result_chars: Input should be greater"):
        Settings.load()
    write(home, '[[mcp.servers]]\nname = "x"\ncommand = "c"\ntimeout = -1\n')
    with pytest.raises(ConfigError, match=rf"^invalid settings: {path}: \[mcp\] servers\.0\.timeout: "):
        Settings.load()
    path.unlink()
    monkeypatch.setenv("SABER_TOOL_TIMEOUT", "-1")
    with pytest.raises(ConfigError, match=r"^invalid settings: SABER_TOOL_TIMEOUT: Input should be greater than 0$"):
        Settings.load()
    monkeypatch.delenv("SABER_TOOL_TIMEOUT")
    with pytest.raises(ConfigError, match=r"^invalid settings: graph\.max_parallel: Input should be greater"):
        Settings.load(graph={"max_parallel": 0})


def test_the_graph_section_is_the_graph_config_the_runtime_reads(home: Path) -> None:
    write(home, '[graph]\nmax_parallel = 2\nhedge = 0.5\ncheckpoint_lease = 4\n')
    settings = Settings.load()
    assert isinstance(settings.graph, GraphConfig)
    assert settings.graph == GraphConfig(max_parallel=2, hedge=0.5, checkpoint_lease=4)
    assert GraphConfig.from_settings(settings) is settings.graph
    assert GraphConfig.from_settings(settings, max_replan=0).max_replan == 0
    assert Settings(home=home / "elsewhere").graph == GraphConfig()  # one set of defaults


def test_the_table_of_names_is_unambiguous() -> None:
    canonical = [variable(section, key) for section in SECTIONS for key in section_keys(section)]
    assert len(canonical) == len(set(canonical))
    assert not set(canonical) & set(OLD_VARIABLES)
    assert all(FLAT_NAMES[f"{section}_{key}"] == (section, key) for section in SECTIONS for key in section_keys(section))
    assert FLAT_NAMES["database_url"] == ("database", "url") and variable("database", "url") == "SABER_DATABASE_URL"


def test_a_flat_table_valued_key_at_the_top_of_the_file_is_still_read(home: Path) -> None:
    write(home, 'server_api_keys = { "sha256:ab" = "alice" }\n[server]\nadmins = ["alice"]\n')
    settings = Settings.load()
    assert settings.server.api_keys == {"sha256:ab": "alice"} and settings.server.admins == ["alice"]

"""Settings: defaults < saber.toml < SABER_* environment < keyword arguments; clear errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from saber.config import ConfigError, Settings
from saber.config.sections import ExecSettings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in list(__import__("os").environ):
        if key.startswith("SABER_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("SABER_HOME", str(tmp_path))
    return tmp_path


def test_defaults_without_file(clean_env: Path) -> None:
    s = Settings.load()
    assert s.home == clean_env
    assert not s.has_model and s.llm.model is None
    assert s.graph.max_parallel == 8
    assert s.sqlite_path == clean_env / "saber.db"


def test_toml_sections_and_env_and_keywords_in_order(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (clean_env / "saber.toml").write_text(
        '[llm]\nmodel = "qwen-plus"\nbase_url = "http://localhost:9/v1"\n[graph]\nmax_parallel = 3\n', encoding="utf-8"
    )
    s = Settings.load()
    assert s.llm.model == "qwen-plus" and s.graph.max_parallel == 3
    assert s.llm.base_url == "http://localhost:9/v1"
    monkeypatch.setenv("SABER_LLM_MODEL", "deepseek-chat")
    assert Settings.load().llm.model == "deepseek-chat"
    assert Settings.load(llm={"model": "x"}).llm.model == "x"
    assert Settings.load(llm={"model": "x"}).llm.base_url == "http://localhost:9/v1"  # merged, not replaced


def test_invalid_toml_names_the_file(clean_env: Path) -> None:
    (clean_env / "saber.toml").write_text("[llm\nmodel = 1", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"saber\.toml: invalid TOML"):
        Settings.load()


def test_unknown_keys_are_named(clean_env: Path) -> None:
    (clean_env / "saber.toml").write_text('[llm]\nmodle = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"saber\.toml: unknown setting\(s\): llm\.modle"):
        Settings.load()


def test_bad_values_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_GRAPH_MAX_PARALLEL", "zero")
    with pytest.raises(ConfigError, match="invalid settings: SABER_GRAPH_MAX_PARALLEL: Input should be a valid integer"):
        Settings.load()


def test_config_path_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('[search]\nbackend = "none"\n', encoding="utf-8")
    monkeypatch.setenv("SABER_CONFIG", str(other))
    assert Settings.load().search.backend == "none"


def test_secrets_are_masked() -> None:
    s = Settings.load(llm={"api_key": "sk-1234567890abcdefWXYZ"}, database={"url": "postgresql://u:hunter2@db/saber"},
                      search={"tavily_api_key": "short"})
    shown = s.masked()
    assert shown["llm"]["api_key"] == "sk-…WXYZ"
    assert shown["search"]["tavily_api_key"] == "***"
    assert "hunter2" not in shown["database"]["url"] and shown["database"]["url"].endswith("@db/saber")


def test_blank_model_means_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_LLM_MODEL", "  ")
    assert not Settings.load().has_model


def test_home_is_expanded_and_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SABER_HOME", "~/data")
    s = Settings.load()
    assert s.home == tmp_path / "data" and s.sqlite_path == tmp_path / "data" / "saber.db"
    monkeypatch.setenv("SABER_HOME", "")
    assert Settings.load().home == tmp_path / ".saber"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SABER_HOME", "relative")
    assert Settings.load().home == tmp_path / "relative"


def test_a_missing_explicit_config_file_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SABER_CONFIG", str(tmp_path / "typo.toml"))
    with pytest.raises(ConfigError, match="does not exist"):
        Settings.load()


def test_an_explicit_home_reads_its_own_toml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "saber.toml").write_text('[llm]\nmodel = "from-other-home"\n', encoding="utf-8")
    assert Settings.load(home=other).llm.model == "from-other-home"
    assert Settings.load().llm.model is None


def test_variables_are_read_in_any_case_and_keyword_arguments_win(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (clean_env / "saber.toml").write_text('[graph]\nmax_parallel = 3\nstep_timeout = 9\n', encoding="utf-8")
    monkeypatch.setenv("saber_graph_max_parallel", "5")
    s = Settings.load()
    assert (s.graph.max_parallel, s.graph.step_timeout) == (5, 9)
    assert Settings.load(graph={"max_parallel": 2}).graph.max_parallel == 2
    monkeypatch.setenv("SABER_NOT_A_SETTING", "x")
    assert Settings.load().graph.max_parallel == 5


def test_list_variables_take_commas_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_SERVER_ADMINS", " alice, bob ,,")
    monkeypatch.setenv("SABER_EXEC_ALLOW", '["ls", "a,b"]')
    monkeypatch.setenv("SABER_TOOLS_MODULES", "pkg.tools")
    s = Settings.load()
    assert s.server.admins == ["alice", "bob"]
    assert s.exec.allow == ["ls", "a,b"]
    assert s.tools.modules == ["pkg.tools"]


def test_structured_variables_are_json_and_blank_ones_are_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_SERVER_API_KEYS", '{"sha256:ab": "alice"}')
    monkeypatch.setenv("SABER_MCP_SERVERS", '[{"name": "time", "command": "mcp-server-time"}]')
    monkeypatch.setenv("SABER_EXEC_ALLOW", "  ")
    s = Settings.load()
    assert s.server.api_keys == {"sha256:ab": "alice"}
    assert [server.name for server in s.mcp.servers] == ["time"]
    assert s.exec.allow == ExecSettings().allow


@pytest.mark.parametrize(("variable", "value"), [
    ("SABER_SERVER_API_KEYS", "alice"),
    ("SABER_MCP_SERVERS", "[{name: time}]"),
    ("SABER_FILES_ROOTS", "[/tmp"),
])
def test_a_variable_that_is_not_json_is_one_error_naming_it(monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=rf"^{variable}: not valid JSON \(.*at character \d+\); write it as "):
        Settings.load()


def test_a_variable_of_the_wrong_shape_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_SERVER_API_KEYS", '["not", "a", "mapping"]')
    with pytest.raises(ConfigError, match="invalid settings: SABER_SERVER_API_KEYS: Input should be a valid dictionary"):
        Settings.load()


@pytest.mark.parametrize(("variable", "value", "named"), [
    ("SABER_TOOLS_TIMEOUT", "nan", "SABER_TOOLS_TIMEOUT: Input should be a finite number"),
    ("SABER_LLM_TIMEOUT", "-1", "SABER_LLM_TIMEOUT: Input should be greater than 0"),
    ("SABER_GRAPH_STEP_TIMEOUT", "inf", "SABER_GRAPH_STEP_TIMEOUT: Input should be a finite number"),
    ("SABER_LLM_BASE_URL", "notaurl", "SABER_LLM_BASE_URL: 'notaurl' is not an http:// or https:// URL"),
    ("SABER_DATABASE_URL", "mysql://me:secret@db/saber",
     "SABER_DATABASE_URL: 'mysql://me:***@db/saber' is not a PostgreSQL URL"),
    ("SABER_DATABASE_URL", "sqlite:///x.db", "leave it unset for the SQLite database in SABER_HOME"),
    ("SABER_EMBEDDING_BASE_URL", "localhost:8080/v1", "SABER_EMBEDDING_BASE_URL: 'localhost:8080/v1' is not"),
    ("SABER_LLM_TEMPERATURE", "7", "SABER_LLM_TEMPERATURE: Input should be less than or equal to 2"),
])
def test_values_that_would_break_every_call_are_refused_at_load(monkeypatch: pytest.MonkeyPatch, variable: str,
                                                                 value: str, named: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=f"invalid settings: .*{re.escape(named)}"):
        Settings.load()


def test_an_endpoint_url_is_kept_as_given_and_a_blank_one_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_LLM_BASE_URL", " http://127.0.0.1:8080/v1 ")
    assert Settings.load().llm.base_url == "http://127.0.0.1:8080/v1"
    monkeypatch.setenv("SABER_LLM_BASE_URL", " ")
    assert Settings.load().llm.base_url is None


def test_a_folder_where_the_settings_file_should_be_is_an_error(clean_env: Path) -> None:
    (clean_env / "saber.toml").mkdir()
    with pytest.raises(ConfigError, match=r"saber\.toml: not a file"):
        Settings.load()

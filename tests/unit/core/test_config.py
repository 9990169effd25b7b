"""Settings: defaults < saber.toml < SABER_* environment < keyword arguments; clear errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from saber.config import ConfigError, Settings


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
    assert not s.has_model and s.llm_model is None
    assert s.graph_max_parallel == 8
    assert s.sqlite_path == clean_env / "saber.db"


def test_toml_sections_are_flattened_and_env_wins(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (clean_env / "saber.toml").write_text(
        '[llm]\nmodel = "qwen-plus"\nbase_url = "http://localhost:9/v1"\n[graph]\nmax_parallel = 3\n', encoding="utf-8"
    )
    s = Settings.load()
    assert s.llm_model == "qwen-plus" and s.graph_max_parallel == 3
    monkeypatch.setenv("SABER_LLM_MODEL", "deepseek-chat")
    assert Settings.load().llm_model == "deepseek-chat"
    assert Settings.load(llm_model="x").llm_model == "x"


def test_invalid_toml_names_the_file(clean_env: Path) -> None:
    (clean_env / "saber.toml").write_text("[llm\nmodel = 1", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"saber\.toml: invalid TOML"):
        Settings.load()


def test_unknown_keys_are_named(clean_env: Path) -> None:
    (clean_env / "saber.toml").write_text('[llm]\nmodle = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown setting.*llm_modle"):
        Settings.load()


def test_bad_values_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_GRAPH_MAX_PARALLEL", "zero")
    with pytest.raises(ConfigError, match="graph_max_parallel"):
        Settings.load()


def test_config_path_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('search_backend = "none"\n', encoding="utf-8")
    monkeypatch.setenv("SABER_CONFIG", str(other))
    assert Settings.load().search_backend == "none"


def test_secrets_are_masked() -> None:
    s = Settings.load(llm_api_key="sk-1234567890abcdefWXYZ", database_url="postgresql://u:hunter2@db/saber", tavily_api_key="short")
    shown = s.masked()
    assert shown["llm_api_key"] == "sk-…WXYZ"
    assert shown["tavily_api_key"] == "***"
    assert "hunter2" not in shown["database_url"] and shown["database_url"].endswith("@db/saber")


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
    assert Settings.load(home=other).llm_model == "from-other-home"
    assert Settings.load().llm_model is None


def test_variables_are_read_in_any_case_and_keyword_arguments_win(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (clean_env / "saber.toml").write_text('[graph]\nmax_parallel = 3\nstep_timeout = 9\n', encoding="utf-8")
    monkeypatch.setenv("saber_graph_max_parallel", "5")
    s = Settings.load()
    assert (s.graph_max_parallel, s.graph_step_timeout) == (5, 9)
    assert Settings.load(graph_max_parallel=2).graph_max_parallel == 2
    monkeypatch.setenv("SABER_NOT_A_SETTING", "x")
    assert Settings.load().graph_max_parallel == 5


def test_list_variables_take_commas_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_SERVER_ADMINS", " alice, bob ,,")
    monkeypatch.setenv("SABER_EXEC_ALLOW", '["ls", "a,b"]')
    monkeypatch.setenv("SABER_TOOLS_MODULES", "pkg.tools")
    s = Settings.load()
    assert s.server_admins == ["alice", "bob"]
    assert s.exec_allow == ["ls", "a,b"]
    assert s.tools_modules == ["pkg.tools"]


def test_structured_variables_are_json_and_blank_ones_are_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_SERVER_API_KEYS", '{"sha256:ab": "alice"}')
    monkeypatch.setenv("SABER_MCP_SERVERS", '[{"name": "time", "command": "mcp-server-time"}]')
    monkeypatch.setenv("SABER_EXEC_ALLOW", "  ")
    s = Settings.load()
    assert s.server_api_keys == {"sha256:ab": "alice"}
    assert [server.name for server in s.mcp_servers] == ["time"]
    assert s.exec_allow == Settings.model_fields["exec_allow"].get_default(call_default_factory=True)


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
    with pytest.raises(ConfigError, match="server_api_keys"):
        Settings.load()


@pytest.mark.parametrize(("variable", "value", "named"), [
    ("SABER_TOOL_TIMEOUT", "nan", "tool_timeout"),
    ("SABER_LLM_TIMEOUT", "-1", "llm_timeout"),
    ("SABER_GRAPH_STEP_TIMEOUT", "inf", "graph_step_timeout"),
    ("SABER_LLM_BASE_URL", "notaurl", "llm_base_url: 'notaurl' is not an http:// or https:// URL"),
    ("SABER_DATABASE_URL", "mysql://me:secret@db/saber",
     "database_url: 'mysql://me:***@db/saber' is not a PostgreSQL URL"),
    ("SABER_DATABASE_URL", "sqlite:///x.db", "leave it unset for the SQLite database in SABER_HOME"),
    ("SABER_EMBEDDING_BASE_URL", "localhost:8080/v1", "embedding_base_url"),
    ("SABER_LLM_TEMPERATURE", "7", "llm_temperature"),
])
def test_values_that_would_break_every_call_are_refused_at_load(monkeypatch: pytest.MonkeyPatch, variable: str,
                                                                 value: str, named: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=f"invalid settings: .*{re.escape(named)}"):
        Settings.load()


def test_an_endpoint_url_is_kept_as_given_and_a_blank_one_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_LLM_BASE_URL", " http://127.0.0.1:8080/v1 ")
    assert Settings.load().llm_base_url == "http://127.0.0.1:8080/v1"
    monkeypatch.setenv("SABER_LLM_BASE_URL", " ")
    assert Settings.load().llm_base_url is None


def test_a_folder_where_the_settings_file_should_be_is_an_error(clean_env: Path) -> None:
    (clean_env / "saber.toml").mkdir()
    with pytest.raises(ConfigError, match=r"saber\.toml: not a file"):
        Settings.load()

"""Settings: defaults < ``saber.toml`` < ``SABER_*`` environment variables < keyword arguments.

The TOML file is ``$SABER_CONFIG`` if set, else ``$SABER_HOME/saber.toml``. Its sections are
flattened with ``_``: ``[llm] model = "x"`` is the same setting as ``SABER_LLM_MODEL=x``.
"""

from __future__ import annotations

import json
import logging
import os
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from saber.config.graph import GRAPH_DEFAULTS as _GRAPH
from saber.config.mcp import MCPServerConfig, check_server_entries

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file or the setting."""


def default_home() -> Path:
    return _home_path(os.environ.get("SABER_HOME"))


def _home_path(value: object) -> Path:
    """``~`` expanded and made absolute, so every store lands in the same folder whatever the
    current directory; blank means the default ``~/.saber``."""
    text = str(value).strip() if value is not None else ""
    return Path(text or Path.home() / ".saber").expanduser().absolute()


def config_path(home: object = None) -> Path:
    """``$SABER_CONFIG``, else ``saber.toml`` in ``home`` (default: ``$SABER_HOME``)."""
    explicit = os.environ.get("SABER_CONFIG")
    if explicit and explicit.strip():
        return Path(explicit.strip()).expanduser()
    return (_home_path(home) if home is not None else default_home()) / "saber.toml"


def _file_values(home: object) -> dict[str, Any]:
    """The settings in ``saber.toml`` (or ``$SABER_CONFIG``, which must exist when set), flattened."""
    path = config_path(home)
    if path.exists() and not path.is_file():
        raise ConfigError(f"{path}: not a file (a settings file is expected there)")
    if os.environ.get("SABER_CONFIG", "").strip() and not path.is_file():
        raise ConfigError(f"{path}: SABER_CONFIG names a file that does not exist (or is not a file)")
    known = set(Settings.model_fields) | set(_RENAMED)
    return read_toml(path, known) if path.is_file() else {}


def env_values() -> dict[str, Any]:
    """Every ``SABER_<SETTING>`` variable (any case), structured values decoded.

    A list of strings may be written ``a,b`` or as JSON (``["a", "b"]``); a mapping or a list of
    tables (``SABER_SERVER_API_KEYS``, ``SABER_MCP_SERVERS``) is JSON. A blank structured variable
    counts as unset. Anything else is passed as text and validated with the setting."""
    variables = {key.upper(): value for key, value in os.environ.items() if key.upper().startswith("SABER_")}
    out: dict[str, Any] = {}
    for name, shape in _ENV_SHAPES.items():
        variable = f"SABER_{name.upper()}"
        if variable not in variables:
            continue
        text = variables[variable]
        if shape == "text":
            out[name] = text
        elif text.strip():
            out[name] = _decoded(variable, text.strip(), shape)
    return out


def _decoded(variable: str, text: str, shape: str) -> Any:
    if shape == "list" and not text.startswith("["):
        return [part.strip() for part in text.split(",") if part.strip()]
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        example = {"list": '["a", "b"] or a,b', "mapping": '{"name": "value"}'}.get(shape, '[{"name": "x", ...}]')
        raise ConfigError(f"{variable}: not valid JSON ({exc.msg} at character {exc.pos}); write it as {example}") from None


def _env_shape(annotation: Any) -> str:
    """How a variable for a setting of this type is read: ``text``, ``list`` (of plain values),
    ``mapping`` or ``json`` (a list of tables)."""
    origin = get_origin(annotation)
    if origin is dict:
        return "mapping"
    if origin is list:
        (item,) = get_args(annotation)
        return "json" if isinstance(item, type) and issubclass(item, BaseModel) else "list"
    return "text"


def read_toml(path: Path, known: set[str]) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            for sub, item in value.items():
                flat[f"{key}_{sub}"] = item
        else:
            flat[key] = value
    unknown = sorted(k for k in flat if k not in known)
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s): {', '.join(unknown)}")
    return flat


_RENAMED = {"graph_max_retries": "graph_max_attempts"}
"""Settings renamed since 0.1: the old name (keyword, ``SABER_*`` variable or file key) still works."""


def _renamed(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for old, new in _RENAMED.items():
        value = data.pop(old, None)
        if value is None:
            value = os.environ.get(f"SABER_{old.upper()}")
        if value is not None:
            log.warning("setting %s is deprecated: use %s", old, new)
            data.setdefault(new, value)
    return data


class Settings(BaseModel):
    """Every setting of Saber, from (lowest first) the defaults, ``saber.toml``, ``SABER_*``
    environment variables and keyword arguments. ``[llm] model = "x"`` in the file is
    ``SABER_LLM_MODEL=x`` and ``Settings(llm_model="x")``. ``Settings.load()`` turns validation
    errors into one ``ConfigError`` naming each bad setting."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)

    home: Path = Field(default_factory=default_home)
    """Data folder: the SQLite file, uploaded documents and saber.toml."""

    # language model (any OpenAI-compatible endpoint); empty model = no-model mode
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str | None = None
    llm_temperature: float = Field(0.2, ge=0, le=2)
    llm_timeout: float = Field(60.0, gt=0)
    llm_max_retries: int = 2
    llm_structured_output: bool = False
    """Send the plan's JSON Schema as response_format (only for endpoints that support it)."""
    llm_stall_timeout: float = Field(30.0, gt=0)
    """Seconds a streamed answer may go without new text before it is cut (``llm_timeout`` bounds
    the whole call, streams included)."""
    llm_max_tokens_planner: int = Field(768, ge=16)
    llm_max_tokens_answer: int = Field(1024, ge=16)
    llm_max_tokens_tool_arguments: int = Field(256, ge=16)
    llm_max_tokens_extraction: int = Field(256, ge=16)
    request_deadline: float = Field(180.0, gt=0)
    """Seconds a request may take: by then it ends with whatever answer it has, saying so."""
    llm_structured_form: Literal["auto", "openai", "vllm", "vllm_guided", "ollama", "llamacpp", "off"] = "auto"
    """How that schema is sent (``saber.llm.structured``); ``auto`` asks the endpoint once."""

    # storage
    database_url: str | None = None
    """PostgreSQL (with pgvector) URL; the embedded SQLite file under ``home`` when unset."""
    redis_url: str | None = None
    db_pool_size: int = Field(5, ge=1, le=1000)
    """Connections each process keeps open to the database (as many again for bursts); the
    knowledge base, memory and checkpoints share them."""

    # built-in tools
    search_backend: Literal["auto", "tavily", "searxng", "ddgs", "none"] = "auto"
    tavily_api_key: SecretStr | None = None
    searxng_url: str | None = None
    weather_geocoding_url: str = "https://geocoding-api.open-meteo.com/v1/search"
    weather_forecast_url: str = "https://api.open-meteo.com/v1/forecast"
    tool_timeout: float = Field(10.0, gt=0)
    default_city: str | None = None
    default_timezone: str = "Asia/Shanghai"

    # embeddings
    embedding_provider: Literal["local", "openai"] = "local"
    embedding_local_model: Literal["auto", "use-multilingual-v3", "multilingual-e5-small"] = "auto"
    """The bundled model ``local`` uses. auto: the one a knowledge base was indexed with (so one built
    with multilingual-e5-small before USE became the default keeps working), else USE multilingual v3."""
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_model: str = "text-embedding-3-small"
    embedding_dim: int | None = Field(None, ge=1)
    """Vector size of the OpenAI-compatible model; asked of the endpoint once when unset."""
    embedding_batch_size: int = Field(64, ge=1)

    # knowledge base
    rag_max_file_mb: float = Field(64.0, gt=0)
    rag_max_inflated_mb: float = Field(100.0, gt=0)
    """Megabytes a file may inflate to while it is read (.docx zip members, PDF content streams):
    a decompression bomb is refused when it passes this, not after."""
    rag_max_ratio: float = Field(100.0, gt=1)
    """Inflated bytes per compressed byte a zip member or PDF stream (over 1 MB inflated) may reach."""
    rag_max_text_chars: int = Field(5_000_000, ge=1_000)
    """Characters of text one file may yield."""
    rag_child_size: int = Field(200, ge=20)
    """Characters per small chunk (what is matched); its parent section is what is returned."""
    rag_child_overlap: int = Field(50, ge=0)
    rag_parent_size: int = Field(800, ge=50)
    rag_parent_overlap: int = Field(100, ge=0)
    rag_min_relevance: float | None = None
    """Relevance (cosine above the query's neutral baseline) a passage needs for the knowledge base
    to answer; unset = calibrated for the embedder and the stored documents (saber.agent.relevance)."""

    # graph runtime
    # (defaults: saber.config.graph.GraphConfig's; GraphConfig.from_settings maps these to it)
    graph_max_parallel: int = Field(_GRAPH.max_parallel, ge=1)
    graph_enable_racing: bool = _GRAPH.enable_racing
    graph_race_timeout: float = Field(_GRAPH.race_timeout, ge=0)
    """Seconds a whole race group may take (0 = no limit)."""
    graph_max_attempts: int = Field(_GRAPH.max_attempts, ge=1)
    """Total attempts per node, the first included (``max_retries``, its old name, is still read)."""
    graph_retry_delay: float = Field(_GRAPH.retry_delay, ge=0)
    """Seconds before the second attempt; doubled for each further one."""
    graph_step_timeout: float = Field(_GRAPH.step_timeout, ge=0)
    """Seconds one attempt of a tool call may take (0 = no limit)."""
    graph_sub_agent_timeout: float = Field(_GRAPH.sub_agent_timeout, ge=0)
    """Seconds one attempt of a sub-agent may take (0 = no limit)."""
    graph_max_replan: int = Field(_GRAPH.max_replan, ge=0)
    """Replans (model calls) a task may make when a node fails or its results cannot answer (0 = off)."""
    graph_replan_max_nodes: int = Field(3, ge=1)
    """Nodes one replan may add."""
    graph_hedge: float | None = Field(_GRAPH.hedge, ge=0)
    """Seconds before each further racer of a race group starts (None starts them together)."""
    graph_checkpoint_lease: float = Field(15.0, gt=0)
    """Seconds a running task stays claimed by its process without a heartbeat; after that (or at
    once, when the owner is a dead process on this host) another process may resume it."""
    graph_on_failure: Literal["skip", "continue"] = _GRAPH.on_failure
    """skip: dependents of a failed node are skipped; continue: they run with the failure as input."""

    # system tools: the workspace's files, and commands in a sandbox
    files_enabled: bool = True
    """read_file, list_dir and search_files over the workspace roots."""
    files_roots: list[Path] = Field(default_factory=list)
    """Folders the file tools and exec_command may touch; default: ``home``/workspace."""
    files_write: bool = False
    """Register write_file (it asks for approval before each write)."""
    files_max_read_bytes: int = Field(1_000_000, ge=1)
    files_max_write_bytes: int = Field(1_000_000, ge=1)
    exec_enabled: bool = False
    """Register exec_command (needs bubblewrap unless sandbox = "none")."""
    exec_sandbox: Literal["bwrap", "none"] = "bwrap"
    exec_shell: bool = False
    """Run the command through /bin/sh -c (then every command asks for approval)."""
    exec_network: bool = False
    exec_workspace_write: bool = True
    """Bind the workspace read-write inside the sandbox (false: read-only)."""
    exec_allow: list[str] = Field(default_factory=lambda: ["ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "echo",
                                                           "pwd", "date", "sort", "uniq", "diff", "file", "stat", "du"])
    """Programs of the system (resolved on the sandbox's PATH, never a file in the workspace) that
    run without asking, unless given an option that writes, deletes or runs a program
    (``find -delete``, ``rg --pre``, ``sort -o``...: saber.tools.system.allowlist); anything else,
    interpreters included, needs approval."""
    exec_timeout: float = Field(30.0, gt=0)
    exec_cpu_seconds: int = Field(30, ge=1)
    exec_memory_mb: int = Field(1024, ge=16)
    exec_max_processes: int = Field(64, ge=1)
    exec_max_output_bytes: int = Field(65536, ge=1024)

    # approvals
    approval_tools: list[str] = Field(default_factory=list)
    """Tools that always ask a person before they run (besides those that ask by themselves)."""
    approval_timeout: float = Field(600.0, gt=0)
    """Seconds a step waits for an answer; then it fails as not approved."""

    # agent and memory
    history_turns: int = Field(20, ge=1)
    history_max_chars: int = Field(24_000, ge=1000)
    """What the history put before a query holds in all, at most: the newest messages that fit."""
    memory_merge_threshold: float | None = Field(None, gt=0, le=1)
    """Cosine similarity at or above which a new memory updates an old one instead of being added;
    unset = the embedder's (measured for the bundled E5, calibrated for others)."""
    memory_half_life_days: float = Field(30.0, gt=0)
    """Recency weight of a memory halves every this many days."""
    memory_min_relevance: float | None = None
    """How far above its similarity to neutral sentences a memory must score to be recalled;
    unset = the embedder's (saber.agent.memory.thresholds)."""
    memory_extraction: Literal["cues", "batch", "every_turn", "off"] = "cues"
    """When a model extracts memories and preferences from a turn (the rules always run): ``cues``
    only on a turn that states something about the user ("I live in…", "记住…", "call me…");
    ``batch`` once every ``memory_extraction_batch`` turns; ``every_turn``; ``off``."""
    memory_extraction_batch: int = Field(5, ge=1)
    """Turns one model extraction covers with ``memory_extraction = "batch"``."""

    # limits on what one request may carry (README: "Limits")
    max_query_chars: int = Field(100_000, ge=1)
    """A longer query is refused with a ValueError naming this limit, before any event."""
    max_answer_chars: int = Field(200_000, ge=1)
    """A longer answer is cut to this length, with a note saying so."""
    max_tool_result_chars: int = Field(_GRAPH.max_result_chars, ge=1)
    """A tool's result (as JSON) is cut to this length, with a note saying so."""
    planner_max_nodes: int = Field(64, ge=1)
    """A plan with more nodes keeps its first this many, with a warning."""
    planner_stream: bool = True
    """Stream the planner's output and start each node as soon as it is written (react mode; not
    with ``llm_structured_output``, whose response format is sent only on complete calls)."""
    planner_answer_template: bool = True
    """Answer a lookup with the reply the planner wrote ahead (``{"answer": "… $n1 …"}`` after its
    nodes), filled with the results, when every step succeeded: one model call fewer. False: the
    generator model always writes the answer."""

    # HTTP server (``saber serve``)
    server_api_keys: dict[str, str] = Field(default_factory=dict)
    """API keys as ``"sha256:<hex of the key>" = "<user id>"`` (``saber serve --new-key USER`` prints one)."""
    server_keys_file: Path | None = None
    """A file of more keys, one ``<user id> sha256:<hex>`` per line (``#`` comments)."""
    server_max_body_bytes: int = Field(1_000_000, ge=1024)
    """Largest JSON request body; uploads are limited by ``rag_max_file_mb`` per file instead."""
    server_max_message_chars: int = Field(32_000, ge=1)
    server_max_running_per_user: int = Field(4, ge=1)
    """Requests one user may have running at once; more are answered 429 with Retry-After."""
    server_shutdown_grace: float = Field(10.0, ge=0)
    """Seconds running requests get to finish after SIGTERM before they are cancelled."""
    server_admins: list[str] = Field(default_factory=list)
    """With API keys: the user ids that may manage MCP servers over the API."""
    server_keep_finished: int = Field(1000, ge=0)
    """Finished tasks whose event logs stay in memory for ``/api/tasks/{id}/events``."""
    server_allowed_hosts: list[str] = Field(default_factory=list)
    """Host names the server answers to besides loopback ones and the address it listens on (a
    DNS-rebinding guard): the public name behind a proxy; ``.example.com`` takes its subdomains
    too, ``*`` any name. A page whose origin is one of these may also send requests that change things."""
    server_keyless_admin: bool = False
    """Without API keys: let callers manage MCP servers over the API (off, since any program
    or page that reaches the port could otherwise start commands)."""

    # MCP servers ([[mcp.servers]] tables) and choosing among many tools
    mcp_servers: list[MCPServerConfig] = Field(default_factory=list)
    mcp_startup_timeout: float = Field(10.0, gt=0)
    """Seconds the agent's start waits for its MCP servers; slower ones join when they are ready."""
    tools_select_above: int = Field(30, ge=1)
    """With more tools than this, the planner prompt lists only the most relevant ones."""
    tools_select_k: int = Field(12, ge=1)
    """How many tools the planner prompt lists when selecting."""
    tools_modules: list[str] = Field(default_factory=list)
    """Python modules whose ``@tool`` functions every process registers (with the ``saber.tools``
    entry points): custom tools that every API node and worker must know."""

    # distributed mode (database_url and redis_url both set): API nodes, a run queue, workers
    cluster_lease: float = Field(20.0, gt=0)
    """Seconds a worker's heartbeat (sent every third of it) may be old before its runs count as
    stalled (procrastinate's stalled jobs) and another worker resumes them."""
    cluster_redis_prefix: str = "saber:"
    """Prefix of every Redis key and channel (several deployments may share one Redis)."""
    cluster_events_maxlen: int = Field(10000, ge=100)
    """Events a task's Redis stream keeps (the oldest are trimmed past this)."""
    cluster_events_ttl: int = Field(86400, ge=60)
    """Seconds a task's events stay in Redis after its last one."""
    cluster_max_waiting_per_user: int = Field(1000, ge=1)
    """Requests one user may have queued or running; more are answered 429."""
    cluster_worker_grace: float = Field(30.0, ge=0)
    """Seconds a worker told to stop (SIGTERM) lets its runs finish before handing them back."""
    otel_endpoint: str | None = None
    """OTLP/HTTP endpoint (``http://collector:4318``) for OpenTelemetry traces; off when unset."""
    otel_service_name: str = "saber"

    @model_validator(mode="before")
    @classmethod
    def _accept_old_names(cls, data: Any) -> Any:
        return _renamed(data)

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _check_mcp_servers(cls, value: Any) -> Any:
        return check_server_entries(value)

    @field_validator("llm_base_url", "searxng_url", "embedding_base_url", "weather_geocoding_url",
                     "weather_forecast_url", "otel_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        """An endpoint is an http(s) URL: anything else would fail on every call, far from here."""
        if value is None:
            return None
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value.strip())
            usable = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:  # a bracketed host that is no IPv6 address
            usable = False
        if not usable:
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value.strip()

    @field_validator("home", mode="before")
    @classmethod
    def _expand_home(cls, value: Any) -> Path:
        return _home_path(value)

    @field_validator("llm_base_url", "llm_model", "database_url", "redis_url", "searxng_url", "embedding_base_url", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        from saber.config.database_url import postgres_url_problem

        if value is not None and (problem := postgres_url_problem(value)):
            raise ValueError(problem)
        return value

    def __init__(self, **values: Any) -> None:
        """Keyword arguments over ``SABER_*`` variables over the file over the defaults."""
        super().__init__(**{**_file_values(values.get("home")), **env_values(), **values})

    @classmethod
    def load(cls, **overrides: Any) -> Settings:
        """Settings from the file and environment, with errors turned into one ConfigError."""
        try:
            return cls(**overrides)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors(include_url=False)
            )
            raise ConfigError(f"invalid settings: {problems}") from None

    @property
    def has_model(self) -> bool:
        return bool(self.llm_model)

    @property
    def has_api_keys(self) -> bool:
        """API keys are configured: the server has several users, each seeing only their own
        documents (and the shared ones)."""
        return bool(self.server_api_keys) or self.server_keys_file is not None

    @property
    def sqlite_path(self) -> Path:
        return self.home / "saber.db"

    def masked(self) -> dict[str, Any]:
        """Every setting, secrets shown as ``sk-…wxyz`` (or ``***`` when short)."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                raw = value.get_secret_value()
                value = f"{raw[:3]}…{raw[-4:]}" if len(raw) > 12 else "***"
            elif name in ("database_url", "redis_url") and isinstance(value, str):
                from saber.config.database_url import mask_url

                value = mask_url(value)
            elif isinstance(value, Path):
                value = str(value)
            elif name == "mcp_servers":
                value = [server.masked() for server in value]
            out[name] = value
        return out


_ENV_SHAPES = {name: _env_shape(field.annotation) for name, field in Settings.model_fields.items()}
"""How each setting's ``SABER_*`` variable is read (see ``env_values``)."""

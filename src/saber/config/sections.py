"""The sections of the settings: one pydantic model per ``[table]`` of ``saber.toml``.

``[llm] model = "x"`` in the file, ``SABER_LLM_MODEL=x`` and ``Settings(llm={"model": "x"})`` all
set ``settings.llm.model``. The graph section is ``GraphConfig`` itself (``saber.config.graph``).
Settings whose flat name had no section prefix (``request_deadline``, ``database_url``, ``tool_timeout``…)
live in the section named in ``saber.config.names.HOMED``, which also keeps their old names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from saber.config.mcp import MCPServerConfig, check_server_entries


class Section(BaseModel):
    """A table of the settings: unknown keys are refused, defaults validated, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)


def http_url(value: str | None) -> str | None:
    """An endpoint is an http(s) URL: anything else would fail on every call, far from here."""
    if value is None:
        return None
    try:
        parts = urlsplit(value.strip())
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a bracketed host that is no IPv6 address
        usable = False
    if not usable:
        raise ValueError(f"{value!r} is not an http:// or https:// URL")
    return value.strip()


def blank_is_none(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


class LLMSettings(Section):
    """The language model: any OpenAI-compatible endpoint; no ``model`` = no-model mode."""

    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str | None = None
    temperature: float = Field(default=0.2, ge=0, le=2)
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = 2
    structured_output: bool = False
    """Send the plan's JSON Schema as response_format (only for endpoints that support it)."""
    structured_form: Literal["auto", "openai", "vllm", "vllm_guided", "ollama", "llamacpp", "off"] = "auto"
    """How that schema is sent (``saber.llm.structured``); ``auto`` asks the endpoint once."""
    stall_timeout: float = Field(default=30.0, gt=0)
    """Seconds a streamed answer may go without new text before it is cut (``timeout`` bounds the
    whole call, streams included)."""
    max_tokens_planner: int = Field(default=768, ge=16)
    max_tokens_answer: int = Field(default=1024, ge=16)
    max_tokens_tool_arguments: int = Field(default=256, ge=16)
    max_tokens_extraction: int = Field(default=256, ge=16)

    _blank = field_validator("base_url", "model", mode="before")(blank_is_none)
    _url = field_validator("base_url")(http_url)


class AgentSettings(Section):
    """One request: how long it may take and what it may carry (README: "Limits")."""

    request_deadline: float = Field(default=180.0, gt=0)
    """Seconds a request may take: by then it ends with whatever answer it has, saying so."""
    max_query_chars: int = Field(default=100_000, ge=1)
    """A longer query is refused with a ValueError naming this limit, before any event."""
    max_answer_chars: int = Field(default=200_000, ge=1)
    """A longer answer is cut to this length, with a note saying so."""


class DatabaseSettings(Section):
    """Storage: the embedded SQLite file under ``home``, or PostgreSQL."""

    url: str | None = None
    """PostgreSQL (with pgvector) URL; the embedded SQLite file under ``home`` when unset."""
    pool_size: int = Field(default=5, ge=1, le=1000)
    """Connections each process keeps open to the database (as many again for bursts); the
    knowledge base, memory and checkpoints share them."""

    _blank = field_validator("url", mode="before")(blank_is_none)

    @field_validator("url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        from saber.config.database_url import postgres_url_problem

        if value is not None and (problem := postgres_url_problem(value)):
            raise ValueError(problem)
        return value


class RedisSettings(Section):
    """Redis, for distributed mode (with ``database.url``)."""

    url: str | None = None

    _blank = field_validator("url", mode="before")(blank_is_none)


class SearchSettings(Section):
    """The ``search_web`` tool's backend."""

    backend: Literal["auto", "tavily", "searxng", "ddgs", "none"] = "auto"
    tavily_api_key: SecretStr | None = None
    searxng_url: str | None = None

    _blank = field_validator("searxng_url", mode="before")(blank_is_none)
    _url = field_validator("searxng_url")(http_url)


class WeatherSettings(Section):
    """The ``get_weather`` tool's services (Open-Meteo's by default)."""

    geocoding_url: str = "https://geocoding-api.open-meteo.com/v1/search"
    forecast_url: str = "https://api.open-meteo.com/v1/forecast"

    _url = field_validator("geocoding_url", "forecast_url")(http_url)


class ToolsSettings(Section):
    """The tools: built-in defaults, custom modules, and choosing among many tools."""

    timeout: float = Field(default=10.0, gt=0)
    """Seconds a built-in tool's call to its service may take."""
    default_city: str | None = None
    default_timezone: str = "Asia/Shanghai"
    select_above: int = Field(default=30, ge=1)
    """With more tools than this, the planner prompt lists only the most relevant ones."""
    select_k: int = Field(default=12, ge=1)
    """How many tools the planner prompt lists when selecting."""
    modules: list[str] = Field(default_factory=list)
    """Python modules whose ``@tool`` functions every process registers (with the ``saber.tools``
    entry points): custom tools that every API node and worker must know."""


class EmbeddingSettings(Section):
    """The embedder of the knowledge base and memory."""

    provider: Literal["local", "openai"] = "local"
    local_model: Literal["auto", "use-multilingual-v3", "multilingual-e5-small"] = "auto"
    """The bundled model ``local`` uses. auto: the one a knowledge base was indexed with (so one built
    with multilingual-e5-small before USE became the default keeps working), else USE multilingual v3."""
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "text-embedding-3-small"
    dim: int | None = Field(default=None, ge=1)
    """Vector size of the OpenAI-compatible model; asked of the endpoint once when unset."""
    batch_size: int = Field(default=64, ge=1)

    _blank = field_validator("base_url", mode="before")(blank_is_none)
    _url = field_validator("base_url")(http_url)


class RagSettings(Section):
    """The knowledge base: what a file may be, and how it is cut into chunks."""

    max_file_mb: float = Field(default=64.0, gt=0)
    max_inflated_mb: float = Field(default=100.0, gt=0)
    """Megabytes a file may inflate to while it is read (.docx zip members, PDF content streams):
    a decompression bomb is refused when it passes this, not after."""
    max_ratio: float = Field(default=100.0, gt=1)
    """Inflated bytes per compressed byte a zip member or PDF stream (over 1 MB inflated) may reach."""
    max_text_chars: int = Field(default=5_000_000, ge=1_000)
    """Characters of text one file may yield."""
    child_size: int = Field(default=200, ge=20)
    """Characters per small chunk (what is matched); its parent section is what is returned."""
    child_overlap: int = Field(default=50, ge=0)
    parent_size: int = Field(default=800, ge=50)
    parent_overlap: int = Field(default=100, ge=0)
    min_relevance: float | None = None
    """Relevance (cosine above the query's neutral baseline) a passage needs for the knowledge base
    to answer; unset = calibrated for the embedder and the stored documents (saber.agent.relevance)."""


class FilesSettings(Section):
    """The file tools over the workspace."""

    enabled: bool = True
    """read_file, list_dir and search_files over the workspace roots."""
    roots: list[Path] = Field(default_factory=list)
    """Folders the file tools and exec_command may touch; default: ``home``/workspace."""
    write: bool = False
    """Register write_file (it asks for approval before each write)."""
    max_read_bytes: int = Field(default=1_000_000, ge=1)
    max_write_bytes: int = Field(default=1_000_000, ge=1)


def _allowed_programs() -> list[str]:
    return ["ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "echo", "pwd", "date", "sort", "uniq", "diff",
            "file", "stat", "du"]


class ExecSettings(Section):
    """``exec_command``: commands in a sandbox."""

    enabled: bool = False
    """Register exec_command (needs bubblewrap unless sandbox = "none")."""
    sandbox: Literal["bwrap", "none"] = "bwrap"
    shell: bool = False
    """Run the command through /bin/sh -c (then every command asks for approval)."""
    network: bool = False
    workspace_write: bool = True
    """Bind the workspace read-write inside the sandbox (false: read-only)."""
    allow: list[str] = Field(default_factory=_allowed_programs)
    """Programs of the system (resolved on the sandbox's PATH, never a file in the workspace) that
    run without asking, unless given an option that writes, deletes or runs a program
    (``find -delete``, ``rg --pre``, ``sort -o``...: saber.tools.system.allowlist); anything else,
    interpreters included, needs approval."""
    timeout: float = Field(default=30.0, gt=0)
    cpu_seconds: int = Field(default=30, ge=1)
    memory_mb: int = Field(default=1024, ge=16)
    max_processes: int = Field(default=64, ge=1)
    max_output_bytes: int = Field(default=65536, ge=1024)


class ApprovalSettings(Section):
    """Steps that wait for a person."""

    tools: list[str] = Field(default_factory=list)
    """Tools that always ask a person before they run (besides those that ask by themselves)."""
    timeout: float = Field(default=600.0, gt=0)
    """Seconds a step waits for an answer; then it fails as not approved."""


class HistorySettings(Section):
    """The conversation put before a query."""

    turns: int = Field(default=20, ge=1)
    max_chars: int = Field(default=24_000, ge=1000)
    """What the history put before a query holds in all, at most: the newest messages that fit."""


class MemorySettings(Section):
    """Long-term memory of what users said about themselves."""

    merge_threshold: float | None = Field(default=None, gt=0, le=1)
    """Cosine similarity at or above which a new memory updates an old one instead of being added;
    unset = the embedder's (measured for the bundled E5, calibrated for others)."""
    half_life_days: float = Field(default=30.0, gt=0)
    """Recency weight of a memory halves every this many days."""
    min_relevance: float | None = None
    """How far above its similarity to neutral sentences a memory must score to be recalled;
    unset = the embedder's (saber.agent.memory.thresholds)."""
    extraction: Literal["cues", "batch", "every_turn", "off"] = "cues"
    """When a model extracts memories and preferences from a turn (the rules always run): ``cues``
    only on a turn that states something about the user ("I live in…", "记住…", "call me…");
    ``batch`` once every ``extraction_batch`` turns; ``every_turn``; ``off``."""
    extraction_batch: int = Field(default=5, ge=1)
    """Turns one model extraction covers with ``extraction = "batch"``."""


class PlannerSettings(Section):
    """The planner of react mode."""

    max_nodes: int = Field(default=64, ge=1)
    """A plan with more nodes keeps its first this many, with a warning."""
    stream: bool = True
    """Stream the planner's output and start each node as soon as it is written (react mode; not
    with ``llm.structured_output``, whose response format is sent only on complete calls)."""
    answer_template: bool = True
    """Answer a lookup with the reply the planner wrote ahead (``{"answer": "… $n1 …"}`` after its
    nodes), filled with the results, when every step succeeded: one model call fewer. False: the
    generator model always writes the answer."""


class ServerSettings(Section):
    """The HTTP server (``saber serve``)."""

    api_keys: dict[str, str] = Field(default_factory=dict)
    """API keys as ``"sha256:<hex of the key>" = "<user id>"`` (``saber serve --new-key USER`` prints one)."""
    keys_file: Path | None = None
    """A file of more keys, one ``<user id> sha256:<hex>`` per line (``#`` comments)."""
    max_body_bytes: int = Field(default=1_000_000, ge=1024)
    """Largest JSON request body; uploads are limited by ``rag.max_file_mb`` per file instead."""
    max_message_chars: int = Field(default=32_000, ge=1)
    max_running_per_user: int = Field(default=4, ge=1)
    """Requests one user may have running at once; more are answered 429 with Retry-After."""
    shutdown_grace: float = Field(default=10.0, ge=0)
    """Seconds running requests get to finish after SIGTERM before they are cancelled."""
    admins: list[str] = Field(default_factory=list)
    """With API keys: the user ids that may manage MCP servers over the API."""
    keep_finished: int = Field(default=1000, ge=0)
    """Finished tasks whose event logs stay in memory for ``/api/tasks/{id}/events``."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names the server answers to besides loopback ones and the address it listens on (a
    DNS-rebinding guard): the public name behind a proxy; ``.example.com`` takes its subdomains
    too, ``*`` any name. A page whose origin is one of these may also send requests that change things."""
    keyless_admin: bool = False
    """Without API keys: let callers manage MCP servers over the API (off, since any program
    or page that reaches the port could otherwise start commands)."""


class MCPSettings(Section):
    """MCP servers (``[[mcp.servers]]`` tables) whose tools the agent registers."""

    servers: list[MCPServerConfig] = Field(default_factory=list)
    startup_timeout: float = Field(default=10.0, gt=0)
    """Seconds the agent's start waits for its MCP servers; slower ones join when they are ready."""

    @field_validator("servers", mode="before")
    @classmethod
    def _check_servers(cls, value: Any) -> Any:
        return check_server_entries(value)


class ClusterSettings(Section):
    """Distributed mode (``database.url`` and ``redis.url`` both set): API nodes, a run queue, workers."""

    lease: float = Field(default=20.0, gt=0)
    """Seconds a worker's heartbeat (sent every third of it) may be old before its runs count as
    stalled (procrastinate's stalled jobs) and another worker resumes them."""
    redis_prefix: str = "saber:"
    """Prefix of every Redis key and channel (several deployments may share one Redis)."""
    events_maxlen: int = Field(default=10000, ge=100)
    """Events a task's Redis stream keeps (the oldest are trimmed past this)."""
    events_ttl: int = Field(default=86400, ge=60)
    """Seconds a task's events stay in Redis after its last one."""
    max_waiting_per_user: int = Field(default=1000, ge=1)
    """Requests one user may have queued or running; more are answered 429."""
    worker_grace: float = Field(default=30.0, ge=0)
    """Seconds a worker told to stop (SIGTERM) lets its runs finish before handing them back."""


class OtelSettings(Section):
    """OpenTelemetry traces."""

    endpoint: str | None = None
    """OTLP/HTTP endpoint (``http://collector:4318``) for OpenTelemetry traces; off when unset."""
    service_name: str = "saber"

    _url = field_validator("endpoint")(http_url)

"""Settings: defaults < ``saber.toml`` < ``SABER_*`` environment variables < keyword arguments.

The settings come in sections (``saber.config.names.SECTIONS``): ``[llm] model = "x"`` in the
TOML file (``$SABER_CONFIG`` if set, else ``$SABER_HOME/saber.toml``), ``SABER_LLM_MODEL=x`` and
``Settings(llm={"model": "x"})`` are all ``settings.llm.model``. The flat names from before the
sections (``llm_model = "x"`` at the top of the file, ``Settings(llm_model="x")``,
``settings.llm_model``, ``SABER_TOOL_TIMEOUT``) are still read, with a warning naming the new
spelling.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from saber.config.graph import GraphConfig
from saber.config.names import FLAT_NAMES, SECTIONS
from saber.config.sections import (
    AgentSettings,
    ApprovalSettings,
    ClusterSettings,
    DatabaseSettings,
    EmbeddingSettings,
    ExecSettings,
    FilesSettings,
    HistorySettings,
    LLMSettings,
    MCPSettings,
    MemorySettings,
    OtelSettings,
    PlannerSettings,
    RagSettings,
    RedisSettings,
    SearchSettings,
    ServerSettings,
    ToolsSettings,
    WeatherSettings,
)
from saber.config.sources import (
    ConfigError,
    Gathered,
    config_path,
    default_home,
    gather,
    home_path,
    nest_flat,
)

__all__ = [
    "ConfigError", "GraphConfig", "Settings", "config_path", "default_home",
]


class Settings(BaseModel):
    """Every setting of Saber, by section, from (lowest first) the defaults, ``saber.toml``,
    ``SABER_*`` environment variables and keyword arguments. ``[llm] model = "x"`` in the file is
    ``SABER_LLM_MODEL=x`` and ``Settings(llm={"model": "x"})``, read as ``settings.llm.model``.
    ``Settings.load()`` turns validation errors into one ``ConfigError`` naming each bad setting
    as it was written (the file and key, or the variable)."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)

    home: Path = Field(default_factory=default_home)
    """Data folder: the SQLite file, uploaded documents and saber.toml."""
    llm: LLMSettings = Field(default_factory=LLMSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    weather: WeatherSettings = Field(default_factory=WeatherSettings)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    rag: RagSettings = Field(default_factory=RagSettings)
    graph: GraphConfig = Field(default_factory=GraphConfig)
    """How task graphs run: the ``GraphConfig`` the graph runtime reads."""
    files: FilesSettings = Field(default_factory=FilesSettings)
    exec: ExecSettings = Field(default_factory=ExecSettings)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    planner: PlannerSettings = Field(default_factory=PlannerSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    otel: OtelSettings = Field(default_factory=OtelSettings)

    @model_validator(mode="before")
    @classmethod
    def _accept_flat_names(cls, data: Any) -> Any:
        """``Settings.model_validate({"llm_model": ...})``: flat names, with a DeprecationWarning."""
        return nest_flat(data, stacklevel=5) if isinstance(data, dict) else data

    @field_validator("home", mode="before")
    @classmethod
    def _expand_home(cls, value: Any) -> Path:
        return home_path(value)

    def __init__(self, **values: Any) -> None:
        """Keyword arguments over ``SABER_*`` variables over the file over the defaults."""
        super().__init__(**gather(values, stacklevel=3).values)

    @classmethod
    def load(cls, **overrides: Any) -> Settings:
        """Settings from the file and environment, with errors turned into one ConfigError."""
        gathered = gather(overrides, stacklevel=3)
        try:
            return cls.model_validate(gathered.values)
        except ValidationError as exc:
            raise ConfigError(f"invalid settings: {_problems(exc, gathered)}") from None

    if not TYPE_CHECKING:  # type checkers see only the sections, so that a flat name is an error
        def __getattr__(self, name: str) -> Any:
            place = FLAT_NAMES.get(name)
            if place is None:
                return super().__getattr__(name)
            section, key = place
            warnings.warn(f"settings.{name} is deprecated: use settings.{section}.{key}", DeprecationWarning,
                          stacklevel=2)
            return getattr(getattr(self, section), key)

    @property
    def has_model(self) -> bool:
        return bool(self.llm.model)

    @property
    def has_api_keys(self) -> bool:
        """API keys are configured: the server has several users, each seeing only their own
        documents (and the shared ones)."""
        return bool(self.server.api_keys) or self.server.keys_file is not None

    @property
    def sqlite_path(self) -> Path:
        return self.home / "saber.db"

    def masked(self) -> dict[str, Any]:
        """Every setting, by section, secrets shown as ``sk-…wxyz`` (or ``***`` when short)."""
        out: dict[str, Any] = {"home": str(self.home)}
        for section in SECTIONS:
            value = getattr(self, section)
            items = value.to_dict() if isinstance(value, GraphConfig) else dict(value)
            out[section] = {key: _shown(section, key, item) for key, item in items.items()}
        return out


def _shown(section: str, key: str, value: Any) -> Any:
    if isinstance(value, SecretStr):
        raw = value.get_secret_value()
        return f"{raw[:3]}…{raw[-4:]}" if len(raw) > 12 else "***"
    if key == "url" and section in ("database", "redis") and isinstance(value, str):
        from saber.config.database_url import mask_url

        return mask_url(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list):
        return [item.masked() if hasattr(item, "masked") else (str(item) if isinstance(item, Path) else item)
                for item in value]
    return value


def _problems(exc: ValidationError, gathered: Gathered) -> str:
    return "; ".join(
        f"{gathered.written(e['loc'])}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors(include_url=False)
    )

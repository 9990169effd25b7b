"""Where settings come from, lowest first: ``saber.toml``, ``SABER_*`` variables, keyword arguments.

Each layer becomes ``{(section, key): value}`` with an ``Origin`` per setting (the spelling the
user wrote, for error messages, and the layer, for ``saber config``); the layers are merged key by
key into the nested dict ``Settings`` validates. Flat names from before the sections are read through
``saber.config.names.FLAT_NAMES`` and warned about once each: a log warning for the file and the
environment, a ``DeprecationWarning`` for keyword arguments.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from saber.config.names import (
    FLAT_NAMES,
    OLD_VARIABLES,
    SECTIONS,
    TOP_LEVEL,
    env_shape,
    section_annotations,
    section_keys,
    variable,
)

log = logging.getLogger("saber.config")

Layer = Literal["default", "file", "env", "argument"]
Key = tuple[str, ...]


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file or the setting."""


@dataclass(frozen=True, kw_only=True)
class Origin:
    layer: Layer
    written: str
    """The setting as the user wrote it: ``/x/saber.toml: [llm] model``, ``SABER_LLM_MODEL``,
    ``llm_model`` (a keyword argument)."""


@dataclass(kw_only=True)
class Gathered:
    values: dict[str, Any]
    """Nested, for ``Settings``: ``{"home": ..., "llm": {"model": ...}}``."""
    origins: dict[Key, Origin]
    """``("llm", "model")`` → where its value came from (absent: the default)."""

    def written(self, loc: tuple[str | int, ...]) -> str:
        """A validation error's location named as the user wrote the setting (with any path below
        it, as in ``[[mcp.servers]]``'s ``0.name``)."""
        for size in range(len(loc), 0, -1):
            origin = self.origins.get(tuple(str(part) for part in loc[:size]))
            if origin is not None:
                rest = ".".join(str(part) for part in loc[size:])
                return f"{origin.written}.{rest}" if rest else origin.written
        return ".".join(str(part) for part in loc) or "settings"


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


def canonical(section: str, key: str) -> str:
    return f"[{section}] {key}"


# -- the file ------------------------------------------------------------------------------------

def default_home() -> Path:
    return home_path(os.environ.get("SABER_HOME"))


def home_path(value: object) -> Path:
    """``~`` expanded and made absolute, so every store lands in the same folder whatever the
    current directory; blank means the default ``~/.saber``."""
    text = str(value).strip() if value is not None else ""
    return Path(text or Path.home() / ".saber").expanduser().absolute()


def config_path(home: object = None) -> Path:
    """``$SABER_CONFIG``, else ``saber.toml`` in ``home`` (default: ``$SABER_HOME``)."""
    explicit = os.environ.get("SABER_CONFIG")
    if explicit and explicit.strip():
        return Path(explicit.strip()).expanduser()
    return (home_path(home) if home is not None else default_home()) / "saber.toml"


def file_layer(home: object) -> tuple[dict[Key, Any], dict[Key, Origin]]:
    """The settings in ``saber.toml`` (or ``$SABER_CONFIG``, which must exist when set)."""
    path = config_path(home)
    if path.exists() and not path.is_file():
        raise ConfigError(f"{path}: not a file (a settings file is expected there)")
    if os.environ.get("SABER_CONFIG", "").strip() and not path.is_file():
        raise ConfigError(f"{path}: SABER_CONFIG names a file that does not exist (or is not a file)")
    return read_toml(path) if path.is_file() else ({}, {})


def read_toml(path: Path) -> tuple[dict[Key, Any], dict[Key, Origin]]:
    """``[section] key = value`` tables; a flat ``llm_model = ...`` at the top, or a table that
    is no section (``[tool] timeout``, the flattened ``tool_timeout``), is read with a
    warning naming the new spelling (which wins when both are there). Unknown keys are one
    ConfigError naming them all."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    entries: list[tuple[str | None, str, Any]] = []
    for name, value in data.items():
        if isinstance(value, dict) and (name in SECTIONS or name not in FLAT_NAMES):
            entries += [(name, str(sub), item) for sub, item in value.items()]
        else:
            entries.append((None, name, value))
    placed = [(table, key, item, _place(table, key)) for table, key, item in entries]
    unknown = sorted(key if table is None else f"{table}.{key}" for table, key, _, place in placed if place is None)
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s): {', '.join(unknown)}")
    values: dict[Key, Any] = {}
    origins: dict[Key, Origin] = {}
    # old spellings first, so that a new one for the same setting wins whatever the order in the file
    for table, key, item, place in sorted(placed, key=lambda entry: entry[3] is not None and entry[3][1] is None):
        assert place is not None
        target, old = place
        written = key if table is None else canonical(table, key)
        if old is not None:
            _warn_once(f"{path}: {old} is deprecated: write {canonical(*target) if len(target) == 2 else target[0]}")
        values[target] = item
        origins[target] = Origin(layer="file", written=f"{path}: {written}")
    return values, origins


def _place(table: str | None, key: str) -> tuple[Key, str | None] | None:
    """Where ``key`` of the file (under ``[table]``, or at the top) goes, and its old spelling
    when it is one; None for an unknown key."""
    if table is None:
        if key in TOP_LEVEL:
            return (key,), None
        flat = FLAT_NAMES.get(key)
        return (flat, key) if flat is not None else None
    if table in SECTIONS and key in section_keys(table):
        return (table, key), None
    flat = FLAT_NAMES.get(f"{table}_{key}")
    return (flat, canonical(table, key)) if flat is not None else None


# -- the environment -----------------------------------------------------------------------------

def _shapes() -> dict[Key, str]:
    out: dict[Key, str] = {("home",): "text"}
    for section in SECTIONS:
        for key, annotation in section_annotations(section).items():
            out[(section, key)] = env_shape(annotation)
    return out


_SHAPES = _shapes()


def env_layer() -> tuple[dict[Key, Any], dict[Key, Origin]]:
    """Every ``SABER_<SECTION>_<KEY>`` variable (any case), structured values decoded; the
    variables from before the sections that are named otherwise (``SABER_TOOL_TIMEOUT``) with a warning, the new
    variable winning when both are set.

    A list of strings may be written ``a,b`` or as JSON (``["a", "b"]``); a mapping or a list of
    tables (``SABER_SERVER_API_KEYS``, ``SABER_MCP_SERVERS``) is JSON. A blank structured variable
    counts as unset. Anything else is passed as text and validated with the setting."""
    variables = {key.upper(): value for key, value in os.environ.items() if key.upper().startswith("SABER_")}
    values: dict[Key, Any] = {}
    origins: dict[Key, Origin] = {}
    for old, place in OLD_VARIABLES.items():
        if old in variables:
            new = variable(*place)
            _warn_once(f"{old} is deprecated: use {new} ({canonical(*place)} in saber.toml)")
            if new not in variables:
                _read_variable(old, variables[old], place, values, origins)
    for key in _SHAPES:
        name = f"SABER_{'_'.join(key)}".upper()
        if name in variables:
            _read_variable(name, variables[name], key, values, origins)
    return values, origins


def _read_variable(name: str, text: str, key: Key, values: dict[Key, Any], origins: dict[Key, Origin]) -> None:
    shape = _SHAPES[key]
    if shape == "text":
        values[key] = text
    elif text.strip():
        values[key] = _decoded(name, text.strip(), shape)
    else:
        return
    origins[key] = Origin(layer="env", written=name)


def _decoded(name: str, text: str, shape: str) -> Any:
    if shape == "list" and not text.startswith("["):
        return [part.strip() for part in text.split(",") if part.strip()]
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        example = {"list": '["a", "b"] or a,b', "mapping": '{"name": "value"}'}.get(shape, '[{"name": "x", ...}]')
        raise ConfigError(f"{name}: not valid JSON ({exc.msg} at character {exc.pos}); write it as {example}") from None


# -- keyword arguments ---------------------------------------------------------------------------

def argument_layer(arguments: dict[str, Any], *, stacklevel: int) -> tuple[dict[Key, Any], dict[Key, Origin]]:
    """Keyword arguments of ``Settings(...)``: a section as a dict is merged key by key over the
    file and the environment; a section given as an object (``graph=GraphConfig(...)``) replaces
    that section whole; a flat name (``llm_model=``) is read with a DeprecationWarning."""
    values: dict[Key, Any] = {}
    origins: dict[Key, Origin] = {}
    for name, value in arguments.items():
        if name in SECTIONS and isinstance(value, dict):
            for sub, item in value.items():
                values[(name, str(sub))] = item
                origins[(name, str(sub))] = Origin(layer="argument", written=f"{name}.{sub}")
        elif name in SECTIONS or name in TOP_LEVEL or name not in FLAT_NAMES:
            values[(name,)] = value  # a whole section, home, or an unknown name pydantic will refuse
            origins[(name,)] = Origin(layer="argument", written=name)
        else:
            section, key = FLAT_NAMES[name]
            warnings.warn(f"Settings({name}=...) is deprecated: use Settings({section}={{{key!r}: ...}}) "
                          f"and settings.{section}.{key}", DeprecationWarning, stacklevel=stacklevel)
            if (section, key) not in values:
                values[(section, key)] = value
                origins[(section, key)] = Origin(layer="argument", written=name)
    return values, origins


def nest_flat(data: dict[str, Any], *, stacklevel: int) -> dict[str, Any]:
    """``{"llm_model": "x"}`` (given to ``Settings.model_validate``) as ``{"llm": {"model": "x"}}``."""
    if not any(name in FLAT_NAMES and name not in SECTIONS for name in data):
        return data
    values, _ = argument_layer(data, stacklevel=stacklevel + 1)
    return nested(values)


# -- merging -------------------------------------------------------------------------------------

def _whole(value: Any) -> dict[str, Any] | None:
    """A section object's values (``GraphConfig``, ``LLMSettings``), for merging under a layer above."""
    if isinstance(value, BaseModel):
        return dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    return None


def nested(values: dict[Key, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if len(key) == 1:
            out[key[0]] = value
    for key, value in values.items():
        if len(key) == 2:
            section = out.get(key[0])
            if not isinstance(section, dict):
                section = _whole(section) if section is not None else None
                section = {} if section is None else section
                out[key[0]] = section
            section[key[1]] = value
    return out


def gather(arguments: dict[str, Any], *, stacklevel: int) -> Gathered:
    """The file, the variables and the keyword arguments merged, each over the one before."""
    values: dict[Key, Any] = {}
    origins: dict[Key, Origin] = {}
    home = arguments.get("home")
    for layer_values, layer_origins in (file_layer(home), env_layer(),
                                        argument_layer(arguments, stacklevel=stacklevel + 1)):
        for key, value in layer_values.items():
            if len(key) == 1 and key[0] in SECTIONS:  # a whole section replaces the keys below it
                for lower in [k for k in values if k[0] == key[0]]:
                    del values[lower]
                    origins.pop(lower, None)
            values[key] = value
        origins.update(layer_origins)
    return Gathered(values=nested(values), origins=origins)

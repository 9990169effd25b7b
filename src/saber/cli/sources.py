"""Where each setting's value came from: ``env`` (a ``SABER_*`` variable), ``file`` (saber.toml) or ``default``."""

from __future__ import annotations

from typing import Any, Literal

Source = Literal["env", "file", "default"]


def setting_sources(settings: Any) -> dict[str, Source]:
    """For every field of ``settings`` (a loaded ``Settings``): the layer that set it, highest first."""
    from saber.config import config_path, env_values, read_toml

    fields = list(type(settings).model_fields)
    env = set(env_values())  # as the settings read them: a blank structured variable counts as unset
    path = config_path(settings.home)
    in_file = set(read_toml(path, set(fields))) if path.is_file() else set()
    out: dict[str, Source] = {}
    for name in fields:
        if name in env:
            out[name] = "env"
        elif name in in_file:
            out[name] = "file"
        else:
            out[name] = "default"
    return out

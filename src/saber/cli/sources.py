"""Where each setting's value came from: ``env`` (a ``SABER_*`` variable), ``file`` (saber.toml) or ``default``."""

from __future__ import annotations

from typing import Any, Literal

Source = Literal["env", "file", "default"]


def setting_sources(settings: Any) -> dict[str, Source]:
    """For every setting of ``settings`` (a loaded ``Settings``), by its dotted name (``home``,
    ``llm.model``): the layer that set it, highest first."""
    from saber.config.names import SECTIONS, section_keys
    from saber.config.sources import env_layer, file_layer

    env = set(env_layer()[0])  # as the settings read them: a blank structured variable counts as unset
    in_file = set(file_layer(settings.home)[0])
    keys = [("home",)] + [(section, key) for section in SECTIONS for key in section_keys(section)]
    out: dict[str, Source] = {}
    for key in keys:
        out[".".join(key)] = "env" if key in env else "file" if key in in_file else "default"
    return out

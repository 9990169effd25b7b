"""Every test runs without the developer's own Saber setup: no SABER_* variables, and a fresh
SABER_HOME, so ``~/.saber/saber.toml`` (a real model, a real database) can never leak in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_saber_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    for key in list(os.environ):
        if key.startswith("SABER_"):
            monkeypatch.delenv(key)
    home = tmp_path_factory.mktemp("saber-home")
    monkeypatch.setenv("SABER_HOME", str(home))
    return home

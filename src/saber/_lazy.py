"""Package names imported on first use (PEP 562), so importing a package does not import what
its names live in: ``saber --help`` and a one-tool query stay light."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str], public: Sequence[str]) -> tuple[
        Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``homes`` maps each name to the module that
    defines it; the first use imports that module and keeps the name in the package.

    A name must not also be a submodule's: importing the submodule would bind the module to it."""
    namespace = import_module(package).__dict__

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(public)

    return getattr_, dir_

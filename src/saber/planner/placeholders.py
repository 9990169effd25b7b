"""Moved to ``saber.graph.placeholders`` (the runtime fills placeholders in); kept for old imports."""

from saber.graph.placeholders import PlaceholderError as PlaceholderError
from saber.graph.placeholders import canonicalise as canonicalise
from saber.graph.placeholders import references as references
from saber.graph.placeholders import substitute_placeholders as substitute_placeholders

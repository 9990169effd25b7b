"""``model_from_settings``: the configured model, or the no-model mode when none is configured."""

from __future__ import annotations

from typing import TYPE_CHECKING

from saber.llm.base import ChatModel
from saber.llm.nomodel import NoModel
from saber.llm.retry import RetryingModel

if TYPE_CHECKING:
    from saber.config import Settings


def model_from_settings(settings: Settings) -> ChatModel:
    """``OpenAIChatModel`` wrapped in ``RetryingModel`` when ``llm_model`` is set; ``NoModel`` otherwise.

    ``llm_max_retries`` counts retries after the first attempt.
    """
    if not settings.llm.model:
        return NoModel()
    # the openai client (a large import) loads only when a model is configured
    from saber.llm.openai_compat import OpenAIChatModel

    api_key = settings.llm.api_key.get_secret_value() if settings.llm.api_key is not None else None
    model = OpenAIChatModel(
        settings.llm.model,
        base_url=settings.llm.base_url,
        api_key=api_key or None,
        temperature=settings.llm.temperature,
        timeout=settings.llm.timeout,
        structured=settings.llm.structured_form,
    )
    return RetryingModel(model, max_attempts=max(0, settings.llm.max_retries) + 1)

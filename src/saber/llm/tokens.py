"""An estimate of how many tokens a text costs a model, without a tokenizer.

Every Han character counts as one token and every four other characters as one. For the BPE
vocabularies of current models (cl100k, o200k, Qwen) this lands within about 15 % on the
planner's mixed English / Chinese / JSON prompts, which is enough to keep a prompt inside a
budget; ``bench/tool_selection.py`` counts the same way. No tokenizer file is downloaded.
"""

from __future__ import annotations

import math

from saber.language import HAN_CHAR


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` costs, estimated: Han characters one each, other characters four to a token."""
    han = len(HAN_CHAR.findall(text))
    return han + math.ceil((len(text) - han) / 4)

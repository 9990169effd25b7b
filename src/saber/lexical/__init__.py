"""Matching text by its words, shared by the layers above: the BM25 index and tokenizer
(``bm25``: Chinese through jieba, other scripts by word), reciprocal rank fusion (``fusion``),
and the keyword tables that say what a query asks for (``keywords``: the router, the rule
planner and the tool index read the same ones)."""

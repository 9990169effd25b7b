"""The four ways to answer: chat, tool, rag and react."""

"""Runs of the agent on behalf of a client: ``RunManager`` starts each task once, keeps its
events (``EventLog``) for every subscriber and reconnect, and cancels it; the distributed mode's
manager (``saber.cluster``) builds on it. Used by the HTTP server; knows nothing of HTTP routes."""

"""Runs of the agent on behalf of a client: ``RunManager`` starts each task once (carrying its
``RunRequest``), keeps its events (``EventLog``) for every subscriber and reconnect, and cancels
it; where runs execute is its backend (``LocalRuns`` here, the distributed mode's ``QueuedRuns`` in
``saber.cluster``). Used by the HTTP server; knows nothing of HTTP routes."""

"""Starting the CLI as a user's terminal starts it, for the tests that press Ctrl-C."""

from __future__ import annotations

import signal


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn``: SIGINT at its default in the child, as a terminal's foreground job has it.
    A test run started as a background job (``pytest &``, or from a script that does so) hands
    every process it starts an *ignored* SIGINT, which Python then keeps ignored: the Ctrl-C these
    tests send would do nothing, and the command would run to its end (seen: exit 0 for an ingest
    that was to be interrupted)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

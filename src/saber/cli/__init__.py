"""The ``saber`` command: every subcommand lives in this package (``main`` builds the command,
the other modules are its subcommands and their shared output, errors and ids).

Kept free of heavy imports: ``saber --help`` must not load the agent, the stores or the model.
"""

from saber.cli.main import app, main

__all__ = ["app", "main"]

"""Pieces of the ``saber`` command that several command modules share: output, errors, ids.

Kept free of heavy imports: ``saber --help`` must not load the agent, the stores or the model.
"""

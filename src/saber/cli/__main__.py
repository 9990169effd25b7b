"""``python -m saber.cli``: the ``saber`` command."""

from saber.cli.main import main

main()

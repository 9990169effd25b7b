"""``python -m saber``: the ``saber`` command."""

from saber.cli.main import main

main()

"""``python -m orbitmq.cli``."""

from orbitmq.cli.main import main

main()

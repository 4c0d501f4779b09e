"""End-to-end tests: the `orbitmq` command in subprocesses."""

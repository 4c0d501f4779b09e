"""The ``orbitmq`` command line: servers (``namesrv``, ``broker``, ``start``)."""

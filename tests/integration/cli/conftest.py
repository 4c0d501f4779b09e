"""The operator commands (``orbitmq admin``, ``send``, ``consume``, ``query``) run through
click's runner in this process, against a name server and two brokers on their own loop
thread (real sockets, real stores); results read back from ``--json``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner, Result

from orbitmq.cli.main import cli
from orbitmq.testing import ThreadedCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("cli"), brokers=2) as running:
        yield running


class Orbitmq:
    """Runs ``orbitmq ARGS -n <the cluster's name server>`` and reads what it printed."""

    def __init__(self, namesrv_addr: str) -> None:
        self.namesrv_addr = namesrv_addr

    def run(self, *args: str, stdin: str | None = None) -> Result:
        return CliRunner().invoke(cli, [*args, "-n", self.namesrv_addr], input=stdin)

    def json(self, *args: str, stdin: str | None = None) -> Any:
        """The JSON document the command printed with --json; it must succeed."""
        result = self.run(*args, "--json", stdin=stdin)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def json_lines(self, *args: str, stdin: str | None = None) -> list[dict[str, Any]]:
        """The JSON object per line of a streaming command (send, consume)."""
        result = self.run(*args, "--json", stdin=stdin)
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.stdout.splitlines()]

    def error(self, *args: str) -> str:
        """The one line a failing command printed on stderr; it must exit 1, print nothing
        on stdout."""
        result = self.run(*args)
        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("orbitmq: error: ")
        return lines[0]


@pytest.fixture(scope="module")
def orbitmq(cluster: ThreadedCluster) -> Orbitmq:
    return Orbitmq(cluster.namesrv_addr)

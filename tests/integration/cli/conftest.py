"""The operator commands (``orbitmq admin``, ``send``, ``consume``, ``query``) run through
click's runner in this process, against a name server and two brokers on their own loop
thread (real sockets, real stores); results read back from ``--json``."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner, Result

from orbitmq.cli.main import cli
from orbitmq.client import ConsumeContext, PushConsumer, PushConsumerConfig
from orbitmq.common import MessageExt
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.testing import ThreadedCluster
from tests.eventually import eventually


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


@contextmanager
def running_consumer(
    cluster: ThreadedCluster, group: str, topic: str, expression: str = "*", *, count: int
) -> Iterator[PushConsumer]:
    """A push consumer of ``group`` on the cluster's loop, from the first offset, until it
    has consumed ``count`` messages and committed its offsets; stopped on leaving."""
    seen: list[MessageExt] = []

    async def listener(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        seen.extend(messages)

    config = PushConsumerConfig(consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer = PushConsumer(group, namesrv_addr=cluster.namesrv_addr, config=config)
    consumer.subscribe(topic, expression)
    consumer.register_listener(listener)
    cluster.call(consumer.start())
    try:
        eventually(lambda: len(seen) >= count or None, what=f"{count} messages consumed")
        cluster.call(consumer.persist_offsets())
        yield consumer
    finally:
        cluster.call(consumer.shutdown())

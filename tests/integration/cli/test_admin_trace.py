"""``orbitmq admin queryMsgTraceById`` (click's runner) against a cluster with the trace
topic on: the JSON and the tables show the send and the consume; an unknown trace topic or
a wrong name server is one line on stderr and exit status 1."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from orbitmq.cli.main import cli
from orbitmq.client import (
    ConsumeContext,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
)
from orbitmq.common import Message, MessageExt
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.testing import ThreadedCluster
from tests.eventually import eventually, eventually_async

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path / "cluster", broker_settings={"trace_topic_enable": True}) as c:
        yield c


async def send_and_consume(namesrv: str) -> str:
    """One message sent and consumed with trace on; its id."""
    async with Producer(
        "cli-pg", namesrv_addr=namesrv, config=ProducerConfig(enable_trace=True)
    ) as producer:
        sent = await producer.send(Message("CliTraceTopic", b"x"))
    got: list[str] = []

    async def listener(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        got.extend(m.unique_key or "" for m in messages)

    consumer = PushConsumer(
        "cli-cg",
        namesrv_addr=namesrv,
        config=PushConsumerConfig(
            enable_trace=True, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ),
    )
    consumer.subscribe("CliTraceTopic")
    consumer.register_listener(listener)
    async with consumer:
        await eventually_async(lambda: got == [sent.msg_id], what="the message consumed")
    return sent.msg_id


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["admin", "queryMsgTraceById", *args])


def test_json_and_tables_show_the_send_and_the_consume(cluster: ThreadedCluster) -> None:
    msg_id = cluster.call(send_and_consume(cluster.namesrv_addr))

    def complete() -> dict[str, Any] | None:
        result = invoke("-n", cluster.namesrv_addr, "-i", msg_id, "--json")
        assert result.exit_code == 0, result.output
        trace: dict[str, Any] = json.loads(result.stdout)
        return trace if trace["pub"] and trace["sub"] else None

    trace = eventually(complete, what="Pub and Sub rows")
    assert trace["msg_id"] == msg_id
    assert [(r["group"], r["success"]) for r in trace["pub"]] == [("cli-pg", True)]
    assert [(r["group"], r["success"], r["retry_times"]) for r in trace["sub"]] == [
        ("cli-cg", True, 0)
    ]
    table = invoke("-n", cluster.namesrv_addr, "-i", msg_id, "-t", "RMQ_SYS_TRACE_TOPIC")
    assert table.exit_code == 0
    assert "cli-pg" in table.output and "cli-cg" in table.output and "success" in table.output


def test_no_trace_says_so(cluster: ThreadedCluster) -> None:
    result = invoke("-n", cluster.namesrv_addr, "-i", "0A0000000000000000000000000000FF")
    assert result.exit_code == 0
    assert "no trace of message 0A0000000000000000000000000000FF" in result.output


def test_an_unknown_trace_topic_is_one_line_and_exit_1(cluster: ThreadedCluster) -> None:
    result = invoke("-n", cluster.namesrv_addr, "-i", "X", "-t", "NoSuchTraceTopic")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("orbitmq: error: trace topic NoSuchTraceTopic does not ex")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_wrong_name_server_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1:1")
    result = invoke("-i", "X")
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("orbitmq: error:")

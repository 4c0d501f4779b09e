"""Parsing the source's options: names as in Spark's Kafka connector, clear errors."""

from __future__ import annotations

import pytest

from orbitmq.common import MessageQueue
from orbitmq.spark.options import (
    DEFAULT_MAX_TRIGGER_DELAY_MS,
    DEFAULT_PULL_BATCH_SIZE,
    Credentials,
    OffsetSpec,
    OptionError,
    SinkOptions,
    SourceOptions,
)

BASE = {"namesrvAddr": "127.0.0.1:9876", "topic": "T"}


def parse(*, streaming: bool = False, **extra: str) -> SourceOptions:
    return SourceOptions.parse({**BASE, **extra}, streaming=streaming)


def test_defaults_follow_kafka_batch_earliest_and_stream_latest() -> None:
    batch = parse()
    assert batch.topics == ("T",) and batch.sub_expression == "*"
    assert batch.starting == OffsetSpec("earliest") and batch.ending == OffsetSpec("latest")
    assert parse(streaming=True).starting == OffsetSpec("latest")
    assert batch.fail_on_data_loss is True and batch.consumer_group is None
    assert batch.max_trigger_delay_ms == DEFAULT_MAX_TRIGGER_DELAY_MS
    assert batch.pull_batch_size == DEFAULT_PULL_BATCH_SIZE


def test_keys_are_case_insensitive_and_topics_comma_separated() -> None:
    opts = SourceOptions.parse(
        {"NAMESRVADDR": "h:1", "Topic": " A, B ,", "subexpression": "TagA || TagB"},
        streaming=False,
    )
    assert opts.namesrv_addr == "h:1" and opts.topics == ("A", "B")
    assert opts.sub_expression == "TagA || TagB"


def test_namesrv_addr_falls_back_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876")
    assert SourceOptions.parse({"topic": "T"}, streaming=False).namesrv_addr == "10.0.0.1:9876"
    monkeypatch.delenv("NAMESRV_ADDR")
    with pytest.raises(OptionError, match="namesrvAddr"):
        SourceOptions.parse({"topic": "T"}, streaming=False)


def test_offset_json_names_queues_by_id_or_broker_and_id() -> None:
    spec = parse(startingOffsets='{"T": {"0": 5, "broker-b:0": 7, "1": -2}}').starting
    assert spec.kind == "offsets"
    assert spec.lookup(MessageQueue("T", "broker-a", 0)) == 5
    assert spec.lookup(MessageQueue("T", "broker-b", 0)) == 7  # the exact key wins
    assert spec.lookup(MessageQueue("T", "broker-a", 1)) == -2
    assert spec.lookup(MessageQueue("T", "broker-a", 2)) is None
    assert spec.lookup(MessageQueue("Other", "broker-a", 0)) is None


def test_timestamp_options_take_precedence_as_in_kafka() -> None:
    both = parse(startingOffsets="earliest", startingTimestamp="1700000000000")
    assert both.starting == OffsetSpec("timestamp", timestamp_ms=1_700_000_000_000)
    per_queue = parse(startingOffsetsByTimestamp='{"T": {"3": 1700000000000}}')
    assert per_queue.starting.kind == "timestamps"
    assert per_queue.starting.lookup(MessageQueue("T", "b", 3)) == 1_700_000_000_000


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"topic": " , "}, '"topic" is required'),
        ({"startingOffsets": "{oops"}, "startingOffsets"),
        ({"startingOffsets": "[1]"}, "object of topics"),
        ({"startingOffsets": '{"T": 3}'}, "map queues to numbers"),
        ({"startingOffsets": '{"T": {"x": 3}}'}, "queue key 'x'"),
        ({"startingOffsets": '{"T": {"0": -3}}'}, ">= -2"),
        ({"endingOffsets": '{"T": {"0": -2}}'}, ">= -1"),
        ({"endingOffsets": "earliest"}, "cannot be"),
        ({"startingOffsets": '{"T": {"0": true}}'}, "expected an integer"),
        ({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger"),
        ({"minPartitions": "many"}, "minPartitions"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss"),
        ({"maxTriggerDelay": "soon"}, "maxTriggerDelay"),
    ],
)
def test_bad_values_name_the_option(extra: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=named):
        parse(streaming=False, **extra)


def test_ending_offsets_are_for_batch_reads_only() -> None:
    with pytest.raises(OptionError, match="batch reads only"):
        parse(streaming=True, endingOffsets="latest")


@pytest.mark.parametrize(
    ("text", "ms"),
    [("15m", 900_000), ("30s", 30_000), ("500ms", 500), ("2h", 7_200_000), ("250", 250)],
)
def test_trigger_delay_durations(text: str, ms: int) -> None:
    assert parse(maxTriggerDelay=text).max_trigger_delay_ms == ms


def test_acl_keys_reach_the_clients_and_key_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORBITMQ_ACCESS_KEY", raising=False)
    monkeypatch.delenv("ORBITMQ_SECRET_KEY", raising=False)
    signed = parse(accessKey="spark1", secretKey="s3cret-one")
    config = signed.endpoint.client_config()
    assert (config.access_key, config.secret_key) == ("spark1", "s3cret-one")
    assert config.rpc_hook() is not None
    sink = SinkOptions.parse({**BASE, "AccessKey": "spark1", "SECRETKEY": "s3cret-one"})
    assert sink.endpoint == signed.endpoint
    # Another secret (or none) is another pool key: jobs never share a signed client.
    other = parse(accessKey="spark1", secretKey="s3cret-two").endpoint
    assert other != signed.endpoint and hash(other) != hash(signed.endpoint)
    assert (
        parse().endpoint.credentials is None and parse().endpoint.client_config().rpc_hook() is None
    )


def test_acl_keys_fall_back_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORBITMQ_ACCESS_KEY", "env-key")
    monkeypatch.setenv("ORBITMQ_SECRET_KEY", "env-secret")
    assert parse().credentials == Credentials("env-key", "env-secret")
    assert parse(secretKey="given").credentials == Credentials("env-key", "given")


@pytest.mark.parametrize("given", [{"accessKey": "spark1"}, {"secretKey": "s3cret-one"}])
def test_one_acl_key_alone_is_refused(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, str]
) -> None:
    monkeypatch.delenv("ORBITMQ_ACCESS_KEY", raising=False)
    monkeypatch.delenv("ORBITMQ_SECRET_KEY", raising=False)
    with pytest.raises(OptionError, match="accessKey and secretKey") as refused:
        SourceOptions.parse({**BASE, **given}, streaming=False)
    assert "s3cret-one" not in str(refused.value)


def test_the_secret_is_in_no_repr() -> None:
    opts = parse(accessKey="spark1", secretKey="s3cret-one")
    sink = SinkOptions.parse({**BASE, "accessKey": "spark1", "secretKey": "s3cret-one"})
    for shown in (repr(opts), repr(opts.endpoint), repr(sink), str(sink.endpoint)):
        assert "spark1" in shown and "s3cret-one" not in shown

"""The source's and the sink's options, named as in Spark's Kafka connector where they mean the
same, parsed once on the driver into typed values (``SourceOptions``) with clear errors.

Queues in offset JSON: ``{"TopicA": {"0": 12, "broker-b:1": 40}}``. A key ``"0"`` means queue
0 on every broker that holds the topic, ``"broker-b:1"`` queue 1 on broker-b only. An offset
of -2 means the queue's earliest, -1 its latest (as in Kafka's JSON). A queue left out
starts at its earliest and, for ``endingOffsets``, ends at its latest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final, Literal

import orjson

from orbitmq.client import ClientConfig, TlsSystemConfig
from orbitmq.common import MessageQueue
from orbitmq.common.errors import ConfigError

#: -2 / -1 in offset JSON, as in Kafka's: the queue's earliest / latest offset.
EARLIEST: Final = -2
LATEST: Final = -1
#: Messages one pull asks for. The broker caps a pull at its
#: maxTransferCountOnMessageInMemory / ...OnDisk (32 and 8 by default), so a larger value
#: pays off only where the broker allows it.
DEFAULT_PULL_BATCH_SIZE: Final = 2048
#: Kafka's default for maxTriggerDelay.
DEFAULT_MAX_TRIGGER_DELAY_MS: Final = 15 * 60 * 1000

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$")
_UNIT_MS: Final = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


class OptionError(ConfigError):
    """An option is missing, malformed or contradicts another; the message names it."""


OffsetKind = Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]


@dataclass(frozen=True)
class OffsetSpec:
    """Where reading starts (or ends): the queues' earliest or latest offsets, offsets per
    queue, one timestamp for all queues, or a timestamp per queue (``per_queue`` then holds
    timestamps in ms)."""

    kind: OffsetKind
    per_queue: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    timestamp_ms: int = 0

    def lookup(self, mq: MessageQueue) -> int | None:
        """This spec's value for ``mq`` (offset or timestamp), None when it names none."""
        queues = self.per_queue.get(mq.topic)
        if queues is None:
            return None
        exact = queues.get(f"{mq.broker_name}:{mq.queue_id}")
        return exact if exact is not None else queues.get(str(mq.queue_id))


@dataclass(frozen=True, slots=True)
class Credentials:
    """A plain ACL account (``accessKey`` / ``secretKey``) the clients sign requests with.
    Immutable; the secret is compared and hashed but left out of ``repr``, so it shows in no
    log line, error or plan string."""

    access_key: str
    secret_key: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the connector's clients connect and as whom: the name servers, the TLS
    settings and the ACL credentials (together the clients' pool key, so jobs with other
    keys never share a client). Immutable; sent to executors with the options."""

    namesrv_addr: str
    tls: TlsSystemConfig = field(default_factory=TlsSystemConfig)
    credentials: Credentials | None = None

    def client_config(self) -> ClientConfig:
        account = self.credentials
        return ClientConfig(
            namesrv_addr=self.namesrv_addr,
            use_tls=self.tls.enable,
            tls_config=self.tls,
            access_key=account.access_key if account else None,
            secret_key=account.secret_key if account else None,
        )


@dataclass(frozen=True)
class SourceOptions:
    """Everything the source needs, from ``spark.read.format("orbitmq").option(...)``."""

    namesrv_addr: str
    topics: tuple[str, ...]
    sub_expression: str = "*"
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    fail_on_data_loss: bool = True
    consumer_group: str | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    pull_batch_size: int = DEFAULT_PULL_BATCH_SIZE
    tls: TlsSystemConfig = field(default_factory=TlsSystemConfig)
    credentials: Credentials | None = None

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.namesrv_addr, self.tls, self.credentials)

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        """Parse Spark's (case-insensitive) option map. A batch read starts at the earliest
        offsets by default, a stream at the latest (as Kafka's source does)."""
        opts = {k.lower(): v for k, v in options.items()}
        topics = tuple(t.strip() for t in opts.get("topic", "").split(",") if t.strip())
        if not topics:
            raise OptionError('option "topic" is required: one topic, or several separated by ","')
        if streaming and "endingoffsets" in opts:
            raise OptionError('option "endingOffsets" is for batch reads only')
        return cls(
            namesrv_addr=namesrv_addr(opts),
            topics=topics,
            sub_expression=opts.get("subexpression", "*").strip() or "*",
            starting=_starting(opts, default="latest" if streaming else "earliest"),
            ending=_ending(opts),
            max_offsets_per_trigger=_positive(opts, "maxOffsetsPerTrigger"),
            min_offsets_per_trigger=_positive(opts, "minOffsetsPerTrigger"),
            max_trigger_delay_ms=_duration_ms(
                opts.get("maxtriggerdelay"), DEFAULT_MAX_TRIGGER_DELAY_MS
            ),
            fail_on_data_loss=_boolean(opts, "failOnDataLoss", default=True),
            consumer_group=opts.get("consumergroup") or None,
            min_partitions=_positive(opts, "minPartitions"),
            max_records_per_partition=_positive(opts, "maxRecordsPerPartition"),
            pull_batch_size=_positive(opts, "pullBatchSize") or DEFAULT_PULL_BATCH_SIZE,
            tls=tls_options(opts),
            credentials=acl_options(opts),
        )


#: The producer group sink tasks send as, unless ``producerGroup`` names another.
DEFAULT_PRODUCER_GROUP: Final = "SPARK_ORBITMQ_WRITER"
#: Messages per send request; a request also stays under 4 MiB (the broker's maxMessageSize).
DEFAULT_SEND_BATCH_SIZE: Final = 256


@dataclass(frozen=True)
class SinkOptions:
    """Everything the sink needs, from ``df.write.format("orbitmq").option(...)``."""

    namesrv_addr: str
    #: Where rows without a ``topic`` column (or with a null one) go.
    topic: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    send_batch_size: int = DEFAULT_SEND_BATCH_SIZE
    #: Stage every message as a half message; the driver's commit makes them visible.
    exactly_once: bool = False
    #: Testing only: ``before-commit`` or ``after-commit``, optionally ``:<batch id>``; the
    #: driver's commit fails there, as a crash would stop it. ``task-exit``: a task's first
    #: attempt kills its Python worker right after staging its first half.
    failpoint: str | None = None
    tls: TlsSystemConfig = field(default_factory=TlsSystemConfig)
    credentials: Credentials | None = None

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.namesrv_addr, self.tls, self.credentials)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        opts = {k.lower(): v for k, v in options.items()}
        return cls(
            namesrv_addr=namesrv_addr(opts),
            topic=opts.get("topic", "").strip() or None,
            producer_group=opts.get("producergroup", "").strip() or DEFAULT_PRODUCER_GROUP,
            send_batch_size=_positive(opts, "sendBatchSize") or DEFAULT_SEND_BATCH_SIZE,
            exactly_once=_boolean(opts, "exactlyOnce", default=False),
            failpoint=opts.get("failpoint") or None,
            tls=tls_options(opts),
            credentials=acl_options(opts),
        )


def namesrv_addr(opts: Mapping[str, str]) -> str:
    """``namesrvAddr`` (lower-cased key), else ``$NAMESRV_ADDR`` as RocketMQ's clients read."""
    addr = opts.get("namesrvaddr") or os.environ.get("NAMESRV_ADDR", "")
    if not addr.strip():
        raise OptionError('option "namesrvAddr" is required (or set NAMESRV_ADDR)')
    return addr.strip()


def tls_options(opts: Mapping[str, str]) -> TlsSystemConfig:
    """``tls`` (true: connect with TLS, RocketMQ's tls.enable) and ``tlsConfigFile`` (a
    tls.properties with the tls.client.* keys; RocketMQ's default path when it exists),
    read on the driver: executors get the settings, not the file."""
    path = opts.get("tlsconfigfile", "").strip()
    if path and not os.path.isfile(path):
        raise OptionError(f'option "tlsConfigFile": {path} is not a readable file')
    try:
        tls = TlsSystemConfig.load({"tls.config.file": path} if path else {})
    except ConfigError as exc:
        raise OptionError(f'option "tlsConfigFile": {exc}') from exc
    return replace(tls, enable=True) if _boolean(opts, "tls", default=False) else tls


def acl_options(opts: Mapping[str, str]) -> Credentials | None:
    """``accessKey`` and ``secretKey`` (a plain ACL account of an aclEnable broker), else
    ``$ORBITMQ_ACCESS_KEY`` / ``$ORBITMQ_SECRET_KEY`` as the CLI reads; None when neither is
    set. Read on the driver: executors get the values with the options."""
    access_key = (opts.get("accesskey") or os.environ.get("ORBITMQ_ACCESS_KEY", "")).strip()
    secret_key = (opts.get("secretkey") or os.environ.get("ORBITMQ_SECRET_KEY", "")).strip()
    if not access_key and not secret_key:
        return None
    if not (access_key and secret_key):
        missing = "secretKey" if access_key else "accessKey"
        raise OptionError(
            f'option "{missing}" is required with the other ACL key (accessKey and secretKey,'
            " or ORBITMQ_ACCESS_KEY and ORBITMQ_SECRET_KEY, go together)"
        )
    return Credentials(access_key, secret_key)


def _starting(opts: Mapping[str, str], default: OffsetKind) -> OffsetSpec:
    # Kafka's precedence: startingTimestamp, then startingOffsetsByTimestamp, then
    # startingOffsets.
    if "startingtimestamp" in opts:
        return OffsetSpec("timestamp", timestamp_ms=_integer(opts, "startingTimestamp"))
    if "startingoffsetsbytimestamp" in opts:
        return OffsetSpec(
            "timestamps", per_queue=_queue_json(opts, "startingOffsetsByTimestamp", minimum=0)
        )
    text = opts.get("startingoffsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec("earliest" if text.lower() == "earliest" else "latest")
    return OffsetSpec("offsets", per_queue=_queue_json(opts, "startingOffsets", minimum=EARLIEST))


def _ending(opts: Mapping[str, str]) -> OffsetSpec:
    text = opts.get("endingoffsets", "latest").strip()
    if text.lower() == "latest":
        return OffsetSpec("latest")
    if text.lower() == "earliest":
        raise OptionError('option "endingOffsets" cannot be "earliest"')
    spec = _queue_json(opts, "endingOffsets", minimum=LATEST)
    return OffsetSpec("offsets", per_queue=spec)


def _queue_json(opts: Mapping[str, str], name: str, minimum: int) -> dict[str, dict[str, int]]:
    text = opts.get(name.lower(), "")
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise OptionError(
            f'option "{name}": expected "earliest", "latest" or JSON like '
            f'{{"TopicA": {{"0": 12}}}}, got {text!r} ({exc})'
        ) from None
    if not isinstance(parsed, dict):
        raise OptionError(f'option "{name}": the JSON must be an object of topics, got {text!r}')
    result: dict[str, dict[str, int]] = {}
    for topic, queues in parsed.items():
        if not isinstance(queues, dict):
            raise OptionError(f'option "{name}": topic {topic!r} must map queues to numbers')
        result[topic] = {}
        for key, value in queues.items():
            _check_queue_key(name, topic, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise OptionError(
                    f'option "{name}": {topic} queue {key} has {value!r}, expected an integer'
                    f" >= {minimum}"
                )
            result[topic][key] = value
    return result


def _check_queue_key(name: str, topic: str, key: str) -> None:
    queue_id = key.rpartition(":")[2]
    if not queue_id.isdigit() or key.startswith(":"):
        raise OptionError(
            f'option "{name}": {topic} has queue key {key!r}, expected "<queueId>" or '
            '"<brokerName>:<queueId>"'
        )


def _integer(opts: Mapping[str, str], name: str) -> int:
    text = opts[name.lower()].strip()
    try:
        return int(text)
    except ValueError:
        raise OptionError(f'option "{name}": expected an integer, got {text!r}') from None


def _positive(opts: Mapping[str, str], name: str) -> int | None:
    if name.lower() not in opts:
        return None
    value = _integer(opts, name)
    if value < 1:
        raise OptionError(f'option "{name}": expected a positive integer, got {value}')
    return value


def _boolean(opts: Mapping[str, str], name: str, *, default: bool) -> bool:
    text = opts.get(name.lower())
    if text is None:
        return default
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    raise OptionError(f'option "{name}": expected true or false, got {text!r}')


def _duration_ms(text: str | None, default: int) -> int:
    if text is None:
        return default
    match = _DURATION.match(text.lower())
    if match is None:
        raise OptionError(
            f'option "maxTriggerDelay": expected a duration like "15m", "30s" or "500ms", '
            f"got {text!r}"
        )
    return int(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]

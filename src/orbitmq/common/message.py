"""RocketMQ's message model: Message, MessageExt, MessageExtBrokerInner, MessageQueue.

Field names are RocketMQ's in Python style. The classes are plain slotted dataclasses: one
task or thread owns a message at a time; nothing here locks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.common import message_const as mc

#: A host and port, as ``("10.0.0.1", 10911)`` or ``("::1", 10911)``.
SocketAddress = tuple[str, int]

UNSPECIFIED_ADDRESS: SocketAddress = ("0.0.0.0", 0)


@dataclass(slots=True)
class Message:
    """What a producer sends: topic, body, flag and user/system properties."""

    topic: str
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> str | None:
        return self.properties.get(mc.PROPERTY_TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set_or_clear(mc.PROPERTY_TAGS, value)

    @property
    def keys(self) -> list[str]:
        """The message keys; stored as one KEYS property separated by spaces."""
        raw = self.properties.get(mc.PROPERTY_KEYS)
        return [k for k in raw.split(mc.KEY_SEPARATOR) if k] if raw else []

    @keys.setter
    def keys(self, value: list[str] | str) -> None:
        joined = value if isinstance(value, str) else mc.KEY_SEPARATOR.join(value)
        self._set_or_clear(mc.PROPERTY_KEYS, joined or None)

    @property
    def delay_time_level(self) -> int:
        raw = self.properties.get(mc.PROPERTY_DELAY_TIME_LEVEL)
        return int(raw) if raw else 0

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self._set_or_clear(mc.PROPERTY_DELAY_TIME_LEVEL, str(level) if level else None)

    @property
    def unique_key(self) -> str | None:
        """The client-generated id (UNIQ_KEY) that clients show as the message id."""
        return self.properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(mc.PROPERTY_WAIT_STORE_MSG_OK, "true") != "false"

    def _set_or_clear(self, key: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(key, None)
        else:
            self.properties[key] = value


@dataclass(slots=True)
class MessageExt(Message):
    """A stored message: the sent message plus what the broker recorded about it."""

    queue_id: int = 0
    store_size: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: SocketAddress = UNSPECIFIED_ADDRESS
    store_timestamp: int = 0
    store_host: SocketAddress = UNSPECIFIED_ADDRESS
    #: The offset message id: store host, port and commit log offset as hex.
    msg_id: str = ""
    commit_log_offset: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0


@dataclass(slots=True)
class MessageExtBrokerInner(MessageExt):
    """A message on its way into the store.

    ``properties_string`` is what is written to disk; it is kept beside ``properties`` so a
    property string that arrived on the wire is stored without being rebuilt.
    """

    properties_string: str = ""


@dataclass(slots=True)
class MessageExtBatch(MessageExtBrokerInner):
    """Several messages sent in one request.

    ``body`` holds the client's batch encoding (``encode_batch_messages``); ``properties``
    apply to every message of the batch and are appended to each one's own.
    """


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """One queue of a topic on one broker; ordered as RocketMQ orders them."""

    topic: str
    broker_name: str
    queue_id: int

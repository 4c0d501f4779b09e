"""RocketMQ's message model: Message, MessageExt, MessageExtBrokerInner, MessageQueue.

Field names are RocketMQ's in Python style. The classes are plain slotted dataclasses: one
task or thread owns a message at a time; nothing here locks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from orbitmq.common import message_const as mc
from orbitmq.common.message_const import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR

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
    def deliver_time_ms(self) -> int | None:
        """RocketMQ 5's timer message: the absolute time (epoch ms) the message becomes
        visible to consumers (TIMER_DELIVER_MS). A time now or past delivers at once; at
        most the broker's timerMaxDelaySec ahead."""
        raw = self.properties.get(mc.PROPERTY_TIMER_DELIVER_MS)
        return int(raw) if raw else None

    @deliver_time_ms.setter
    def deliver_time_ms(self, value: int | None) -> None:
        if value is not None and value < 0:
            raise ValueError(f"deliver_time_ms: {value} is negative (epoch milliseconds)")
        self._set_or_clear(mc.PROPERTY_TIMER_DELIVER_MS, None if value is None else str(value))

    @property
    def delay_ms(self) -> int | None:
        """RocketMQ 5's timer message: visible this many ms after it reaches the broker
        (TIMER_DELAY_MS)."""
        raw = self.properties.get(mc.PROPERTY_TIMER_DELAY_MS)
        return int(raw) if raw else None

    @delay_ms.setter
    def delay_ms(self, value: int | None) -> None:
        if value is not None and value < 0:
            raise ValueError(f"delay_ms: {value} is negative")
        self._set_or_clear(mc.PROPERTY_TIMER_DELAY_MS, None if value is None else str(value))

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


#: Held while a MessageExt parses its property string.
_PARSING: Final = threading.Lock()


def string_to_message_properties(text: str) -> dict[str, str]:
    """Parse a property string; pairs without a separator are ignored, as RocketMQ does."""
    properties: dict[str, str] = {}
    for item in text.split(PROPERTY_SEPARATOR):
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep and name:
            properties[name] = value
    return properties


@dataclass(slots=True)
class MessageExt(Message):
    """A stored message: the sent message plus what the broker recorded about it.

    A batch-decoded message may hold its properties still as the stored property string
    (UTF-8 ``name\x01value\x02`` pairs) with the ``properties`` slot unset: the first read
    of ``properties`` parses it, so a consumer that never looks at them never builds the
    dict. :func:`add_properties` adds pairs to either form. A dict assigned to
    ``properties`` before any read leaves the text behind unused; code that adds
    properties after user code had the message calls :meth:`settle_properties` first.
    """

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
    #: The property string not parsed yet; None once it is.
    _properties_text: bytes | None = field(default=None, init=False, repr=False, compare=False)

    if not TYPE_CHECKING:  # mypy would take any attribute name for one __getattr__ answers

        def __getattr__(self, name: str) -> Any:
            # Reached only when the ordinary lookup failed: an unset slot or no such name.
            if name == "properties" and self._properties_text is not None:
                # The consume-timeout cleaner may read a message a listener thread is
                # reading: one parse is published, and both get that dict.
                with _PARSING:
                    text = self._properties_text
                    if text is not None:
                        self.properties = string_to_message_properties(text.decode())
                        self._properties_text = None
                return self.properties
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self
            )

    def settle_properties(self) -> None:
        """Make ``properties`` the one truth again after user code had the message: a dict
        assigned there before any read would otherwise leave the unparsed text beside it,
        and :func:`add_properties` would add to the text."""
        self.properties  # noqa: B018 -- parses the text if the slot is still unset
        self._properties_text = None


def add_properties(messages: Iterable[MessageExt], properties: Mapping[str, str]) -> None:
    """Set ``properties`` in every message's properties, in order, as ``update`` would.

    A message whose property string is not parsed yet gets the pairs appended to it instead
    (parsing keeps a repeated name at its first place with its last value, as assignment
    does), unless a pair would not survive the round trip through the string.
    """
    text = "".join(
        f"{name}{NAME_VALUE_SEPARATOR}{value}{PROPERTY_SEPARATOR}"
        for name, value in properties.items()
    )
    if string_to_message_properties(text) != properties:
        for message in messages:
            message.properties.update(properties)
        return
    suffix = text.encode()
    for message in messages:
        pending = message._properties_text
        if pending is not None:
            message._properties_text = pending + suffix
        else:
            message.properties.update(properties)


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


def to_real_destination(
    message: MessageExt, properties: dict[str, str]
) -> MessageExtBrokerInner | None:
    """``message`` (a parked copy: scheduled, timer) as it is put into the topic and queue
    its REAL_TOPIC / REAL_QID properties name, with ``properties`` (the caller's edited copy
    of its properties; the two are read, not removed). Never waits for a sync flush: the
    delivery is not a client's send. None when it lost its destination."""
    topic = properties.get(mc.PROPERTY_REAL_TOPIC)
    queue_id = properties.get(mc.PROPERTY_REAL_QUEUE_ID, "")
    if not topic or not queue_id.isdigit():
        return None
    properties[mc.PROPERTY_WAIT_STORE_MSG_OK] = "false"
    return MessageExtBrokerInner(
        topic=topic,
        body=message.body,
        flag=message.flag,
        properties=properties,
        queue_id=int(queue_id),
        sys_flag=message.sys_flag,
        born_timestamp=message.born_timestamp,
        born_host=message.born_host,
        reconsume_times=message.reconsume_times,
    )


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """One queue of a topic on one broker; ordered as RocketMQ orders them."""

    topic: str
    broker_name: str
    queue_id: int

"""Name-server bodies: ``ClusterInfo`` (GET_BROKER_CLUSTER_INFO 106), the
``RegisterBrokerBody`` a broker sends with REGISTER_BROKER (103) and the ``KVTable`` of the
name server's key-value configuration (the REGISTER_BROKER response and GET_KVLIST_BY_NAMESPACE).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Final

from orbitmq.protocol.body.errors import BodyError
from orbitmq.protocol.body.json_codec import Body
from orbitmq.protocol.body.json_text import dumps_body, loads_body
from orbitmq.protocol.body.route import BrokerData
from orbitmq.protocol.body.topic import DataVersion, TopicConfig, TopicConfigSerializeWrapper

_LENGTH: Final = struct.Struct(">i")
#: A compressed body may inflate to at most this much (a frame itself is at most 16 MiB).
MAX_INFLATED_BYTES: Final = 64 * 1024 * 1024
#: The name server's key-value namespace of ordered topics' queue layout, topic ->
#: "brokerName:queueNums;..." (``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``); sent to every
#: broker in the REGISTER_BROKER response.
NAMESPACE_ORDER_TOPIC_CONFIG: Final = "ORDER_TOPIC_CONFIG"


@dataclass(slots=True)
class ClusterInfo(Body):
    """Every broker group by name, and the broker names of each cluster."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)


@dataclass(slots=True)
class KVTable(Body):
    """String keys to string values."""

    table: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class RegisterBrokerBody(Body):
    """A broker's topics (with their version) and its filter servers.

    The header's ``compressed`` flag says which form the body has: plain JSON, or RocketMQ's
    deflated record form (see :meth:`decode` and :meth:`encode`).
    """

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)

    @classmethod
    def decode(cls, data: bytes, compressed: bool) -> RegisterBrokerBody:
        return _inflate(data) if compressed else cls.from_json(data)

    def encode(self, compressed: bool) -> bytes:
        return _deflate(self) if compressed else self.to_json()


def _deflate(body: RegisterBrokerBody) -> bytes:
    """zlib stream of length-prefixed (int32) records: the DataVersion JSON, the topic count,
    each topic in ``TopicConfig.to_compact`` form, the filter-server list JSON."""
    wrapper = body.topic_config_serialize_wrapper
    parts = [wrapper.data_version.to_json()]
    raw = [_LENGTH.pack(len(parts[0])), parts[0], _LENGTH.pack(len(wrapper.topic_config_table))]
    for config in wrapper.topic_config_table.values():
        text = config.to_compact().encode()
        raw += [_LENGTH.pack(len(text)), text]
    servers = dumps_body(body.filter_server_list)
    raw += [_LENGTH.pack(len(servers)), servers]
    return zlib.compress(b"".join(raw), 9)


class _Records:
    """Reads the length-prefixed records of an inflated body."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def int32(self) -> int:
        if self._pos + 4 > len(self._data):
            raise BodyError("compressed RegisterBrokerBody ends early")
        (value,) = _LENGTH.unpack_from(self._data, self._pos)
        self._pos += 4
        return int(value)

    def record(self) -> bytes:
        length = self.int32()
        if length < 0 or self._pos + length > len(self._data):
            raise BodyError(f"compressed RegisterBrokerBody record of {length} bytes ends early")
        chunk = self._data[self._pos : self._pos + length]
        self._pos += length
        return chunk


def _inflate(data: bytes) -> RegisterBrokerBody:
    inflater = zlib.decompressobj()
    try:
        plain = inflater.decompress(data, MAX_INFLATED_BYTES)
    except zlib.error as exc:
        raise BodyError(f"compressed RegisterBrokerBody is not zlib data: {exc}") from None
    if inflater.unconsumed_tail:
        raise BodyError(f"compressed RegisterBrokerBody inflates beyond {MAX_INFLATED_BYTES}")
    records = _Records(plain)
    version = DataVersion.from_json(records.record())
    table = {}
    for _ in range(records.int32()):
        try:
            config = TopicConfig.from_compact(records.record().decode())
        except UnicodeDecodeError:
            raise BodyError("compressed RegisterBrokerBody topic is not UTF-8") from None
        table[config.topic_name] = config
    servers = loads_body(records.record())
    if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
        raise BodyError("filterServerList: expected a list of strings")
    return RegisterBrokerBody(TopicConfigSerializeWrapper(table, version), servers)

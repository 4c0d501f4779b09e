"""Messages by key: the index's candidates read back and checked (RocketMQ's
``DefaultMessageStore.queryMessage``).

The index file stores a hash of ``topic#key``, so its entries can name records of other
topics or keys; each candidate record is read and kept only when it really carries the key.
Stateless: safe from any thread, as the index and commit log reads it uses are.
"""

from __future__ import annotations

from collections.abc import Callable

from orbitmq.common import message_const as mc
from orbitmq.common.message_decoder import decode_message
from orbitmq.store.get_message_result import QueryMessageResult
from orbitmq.store.index_service import IndexService


def query_message(
    index_service: IndexService,
    read_record: Callable[[int], memoryview | None],
    request: tuple[str, str, int, int, int],
) -> QueryMessageResult:
    """Records of ``topic`` whose KEYS or UNIQ_KEY equal ``key``, stored in [begin, end], at
    most ``limit``; ``request`` is (topic, key, limit, begin, end), ``read_record`` reads the
    record at a commit log offset."""
    topic, key, limit, begin, end = request
    offsets, last_ts, last_offset = index_service.query_offset(topic, key, limit, begin, end)
    result = QueryMessageResult(
        index_last_update_timestamp=last_ts, index_last_update_phy_offset=last_offset
    )
    for offset in offsets:
        record = read_record(offset)
        if record is not None and record_has_key(record, topic, key):
            result.message_buffers.append(record)
            result.buffer_total_size += len(record)
    return result


def record_has_key(record: memoryview, topic: str, key: str) -> bool:
    """The stored record belongs to ``topic`` and carries ``key`` as its UNIQ_KEY or among
    its KEYS."""
    message = decode_message(record, read_body=False)
    if message.topic != topic:
        return False
    if message.properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == key:
        return True
    return key in message.properties.get(mc.PROPERTY_KEYS, "").split(mc.KEY_SEPARATOR)

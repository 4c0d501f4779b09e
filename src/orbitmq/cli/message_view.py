"""A stored message as the operator commands show it (mqadmin printMsg's fields, in
camelCase): one dict for a table row, a record or a JSON object."""

from __future__ import annotations

from typing import Any

from orbitmq.cli.timestamps import format_timestamp_ms
from orbitmq.common import MessageExt

#: The columns of a message row (the whole record adds more).
ROW_COLUMNS = ("msgId", "offsetMsgId", "queueId", "queueOffset", "storeTime", "tags", "keys")


def host(address: tuple[str, int]) -> str:
    return f"{address[0]}:{address[1]}"


def body_text(message: MessageExt) -> str:
    """The body as UTF-8 text (invalid bytes replaced), as mqadmin prints it."""
    return message.body.decode("utf-8", "replace")


def message_row(message: MessageExt, *, body: bool = False) -> dict[str, Any]:
    """The short form: ids, queue, offset, store time, tags and keys (and the body)."""
    row: dict[str, Any] = {
        "msgId": message.unique_key or message.msg_id,
        "offsetMsgId": message.msg_id,
        "queueId": message.queue_id,
        "queueOffset": message.queue_offset,
        "storeTime": format_timestamp_ms(message.store_timestamp),
        "tags": message.tags or "",
        "keys": " ".join(message.keys),
    }
    if body:
        row["body"] = body_text(message)
    return row


def message_record(message: MessageExt) -> dict[str, Any]:
    """Everything mqadmin queryMsgById prints about a message, body included."""
    return {
        "msgId": message.unique_key or message.msg_id,
        "offsetMsgId": message.msg_id,
        "topic": message.topic,
        "tags": message.tags or "",
        "keys": " ".join(message.keys),
        "queueId": message.queue_id,
        "queueOffset": message.queue_offset,
        "commitLogOffset": message.commit_log_offset,
        "reconsumeTimes": message.reconsume_times,
        "bornTimestamp": message.born_timestamp,
        "bornTime": format_timestamp_ms(message.born_timestamp),
        "storeTimestamp": message.store_timestamp,
        "storeTime": format_timestamp_ms(message.store_timestamp),
        "bornHost": host(message.born_host),
        "storeHost": host(message.store_host),
        "sysFlag": message.sys_flag,
        "bodyCRC": message.body_crc,
        "properties": dict(message.properties),
        "body": body_text(message),
    }

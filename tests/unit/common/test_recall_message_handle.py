"""RocketMQ 5.3's recall handle, version 1: base64url (padded, as Java's URL encoder) of
``v1 topic brokerName timestamp messageId``; anything else is "recall handle is invalid"."""

from __future__ import annotations

import base64

import pytest

from orbitmq.common.recall_message_handle import RecallHandleError, RecallMessageHandle


def test_round_trip_and_layout() -> None:
    handle = RecallMessageHandle("Topic", "broker-a", "1700000000123", "7F00000100002A9F")
    text = handle.encode()
    assert base64.urlsafe_b64decode(text) == b"v1 Topic broker-a 1700000000123 7F00000100002A9F"
    assert RecallMessageHandle.decode(text) == handle
    assert RecallMessageHandle.decode(text.rstrip("=")) == handle  # Java reads it unpadded too
    assert handle.timestamp_ms == 1_700_000_000_123
    assert RecallMessageHandle("T", "b", "soon", "id").timestamp_ms == -1


@pytest.mark.parametrize(
    "text",
    [
        "",
        "%%%",
        base64.urlsafe_b64encode(b"v2 Topic broker-a 1 id").decode(),
        base64.urlsafe_b64encode(b"v1 Topic broker-a 1").decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_what_is_not_a_handle(text: str) -> None:
    with pytest.raises(RecallHandleError, match="recall handle is invalid"):
        RecallMessageHandle.decode(text)

"""A send's time limit says what the send was waiting for when it ran out."""

from __future__ import annotations

import asyncio

import pytest

from orbitmq.client import MQClientError, SendTimeoutError
from orbitmq.client.send_deadline import SendDeadline


async def test_running_out_names_what_the_send_waited_for_and_its_last_error() -> None:
    deadline = SendDeadline("T", 0.01, ["10.0.0.1:9876"])
    with pytest.raises(SendTimeoutError) as caught:
        async with deadline:
            deadline.last_error = MQClientError("CODE: 2 DESC: busy BROKER: 10.0.0.2:10911")
            deadline.waiting_for("broker broker-a at 10.0.0.2:10911", "check that it is running")
            await asyncio.Event().wait()
    assert str(caught.value) == (
        "send to topic T timed out after 10 ms (send_msg_timeout_s) waiting for broker broker-a"
        " at 10.0.0.2:10911; last error: CODE: 2 DESC: busy BROKER: 10.0.0.2:10911;"
        " check that it is running"
    )
    assert isinstance(caught.value, TimeoutError) and caught.value.retriable


async def test_a_send_starts_by_waiting_for_the_route() -> None:
    with pytest.raises(
        SendTimeoutError,
        match=r"waiting for the route of topic T from name"
        r" server a:9876 or b:9876; check namesrv_addr",
    ):
        async with SendDeadline("T", 0.01, ["a:9876", "b:9876"]):
            await asyncio.Event().wait()


async def test_a_timeout_error_of_its_own_passes_through() -> None:
    with pytest.raises(TimeoutError) as caught:
        async with SendDeadline("T", 10, []):
            raise TimeoutError("inner")
    assert type(caught.value) is TimeoutError and str(caught.value) == "inner"

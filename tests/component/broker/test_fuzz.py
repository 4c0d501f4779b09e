"""Bad input against one live broker: garbage and truncated frames, wrong types in every header
field of SEND_MESSAGE_V2 / PULL_MESSAGE / QUERY_CONSUMER_OFFSET / CONSUMER_SEND_MSG_BACK, a
20 MiB length prefix and oversized batches. Each gets an error response or a closed
connection, never a hang; the broker keeps serving a healthy client, and nothing is stored
because of a request that was refused."""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import Message, decode_messages
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import ConsumerSendMsgBackRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION, FLAG_SUSPEND
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import (
    batch_body,
    pull_request,
    send_header,
    send_request,
    sent_header,
)
from tests.component.remoting.support import RawConnection
from tests.support import small_config

pytestmark = [pytest.mark.timeout(60), pytest.mark.asyncio(loop_scope="module")]

TOPIC = "TopicFuzz"
HEALTHY = "TopicFuzzHealthy"
#: A bounded wait for any single answer; nothing here should take more than a moment.
WAIT_S = 3.0
FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def live(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[BrokerController, RemotingClient]]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0)
    controller = BrokerController(
        config,
        small_config(
            root / "store",
            # Larger than max_message_size, as in any real deployment, so a refused
            # oversized batch never forces a commit log file to roll.
            mapped_file_size_commit_log=8 * 1024 * 1024,
        ),
    )
    await controller.start()
    client = RemotingClient(connect_timeout_s=2.0)
    # Create the topics up front so later sends never depend on auto-creation.
    for topic in (TOPIC, HEALTHY):
        response = await client.invoke(
            controller.address,
            send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic), b"seed"),
            5.0,
        )
        sent_header(response)
    yield controller, client
    await client.close()
    await controller.stop()


# --- building raw frames ------------------------------------------------------------------------


def json_frame(header: dict[str, Any], body: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


def request_header(code: int, ext: dict[str, Any], opaque: int = 7) -> dict[str, Any]:
    return {
        "code": code,
        "language": "JAVA",
        "version": 395,
        "opaque": opaque,
        "flag": 0,
        "extFields": ext,
    }


def valid_ext(code: int, broker: BrokerController) -> dict[str, Any]:
    if code == RequestCode.SEND_MESSAGE_V2:
        return dict(send_header(TOPIC).to_v2().to_ext_fields())
    if code == RequestCode.PULL_MESSAGE:
        return dict(pull_request(TOPIC).ext_fields)
    if code == RequestCode.QUERY_CONSUMER_OFFSET:
        return {"consumerGroup": "cg", "topic": TOPIC, "queueId": "0"}
    header = ConsumerSendMsgBackRequestHeader(
        offset=broker.message_store.max_phy_offset + 10**6,
        group="cg",
        delay_level=0,
        origin_topic=TOPIC,
    )
    return dict(header.to_ext_fields())


BAD_VALUES = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-(2**70), max_value=-1),
    st.integers(min_value=2**31, max_value=2**80),
    st.sampled_from(["", "-1", "2147483648", "9" * 40, "1e9", "0x10", "NaN", " 1", "true"]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
#: ``"__missing__"`` as a mutation means "leave the field out".
MUTATION = st.one_of(st.just("__missing__"), BAD_VALUES)
CODES = st.sampled_from(
    [
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.PULL_MESSAGE,
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.CONSUMER_SEND_MSG_BACK,
    ]
)


# --- checks -------------------------------------------------------------------------------------


def stored(broker: BrokerController) -> tuple[int, list[int]]:
    store = broker.message_store
    return store.max_phy_offset, [store.get_max_offset_in_queue(TOPIC, q) for q in range(8)]


async def answer_or_close(
    raw: RawConnection, *, half_close: bool = False
) -> RemotingCommand | None:
    """The server's answer, or None once it closed the connection; a hang fails the test."""
    if half_close:
        with contextlib.suppress(OSError):
            raw.writer.write_eof()
    try:
        async with asyncio.timeout(WAIT_S):
            return await raw.read_command()
    except (EOFError, ConnectionError):
        return None


async def still_healthy(broker: BrokerController, client: RemotingClient) -> None:
    body = b"healthy-check"
    response = await client.invoke(
        broker.address,
        send_request(RequestCode.SEND_MESSAGE_V2, send_header(HEALTHY), body),
        5.0,
    )
    offset = sent_header(response).queue_offset
    # Held by the broker (long polling) until the message is dispatched to its queue.
    request = pull_request(
        HEALTHY, 0, offset, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, suspend_timeout_ms=3000
    )
    pulled = await client.invoke(broker.address, request, 5.0)
    assert pulled.code == ResponseCode.SUCCESS, pulled.remark
    assert decode_messages(pulled.body)[0].body == body


async def exchange(
    broker: BrokerController, data: bytes, *, half_close: bool = False
) -> RemotingCommand | None:
    raw = await RawConnection.open("127.0.0.1", broker.port)
    try:
        await raw.send(data)
        return await answer_or_close(raw, half_close=half_close)
    finally:
        await raw.close()


# --- (a) wrong header field types ---------------------------------------------------------------


@FUZZ
@given(
    code=CODES,
    mutations=st.dictionaries(st.integers(0, 20), MUTATION, min_size=1, max_size=4),
    extra=st.dictionaries(st.text(max_size=8), BAD_VALUES, max_size=2),
    body=st.binary(max_size=64),
)
async def test_wrong_header_field_types(
    live: tuple[BrokerController, RemotingClient],
    code: int,
    mutations: dict[int, Any],
    extra: dict[str, Any],
    body: bytes,
) -> None:
    broker, client = live
    ext = valid_ext(code, broker)
    names = sorted(ext)
    for index, value in mutations.items():
        name = names[index % len(names)]
        if value == "__missing__":
            ext.pop(name, None)
        else:
            ext[name] = value
    ext.update(extra)
    # A legitimately held pull is not a hang: keep any hold shorter than the wait.
    hold = ext.get("suspendTimeoutMillis")
    if code == RequestCode.PULL_MESSAGE and _int_like(hold):
        ext["suspendTimeoutMillis"] = min(int(str(hold).strip()), 500)

    before = stored(broker)
    response = await exchange(broker, json_frame(request_header(code, ext), body or b"x"))
    if response is None or response.code != ResponseCode.SUCCESS:
        assert stored(broker) == before, (code, ext, response and response.remark)
    if response is not None:
        assert response.is_response
        assert response.opaque == 7
    await still_healthy(broker, client)


def _int_like(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    try:
        int(str(value).strip())
    except ValueError:
        return False
    return True


# --- (a) random, truncated and garbage frames ---------------------------------------------------


@FUZZ
@given(data=st.binary(min_size=0, max_size=300))
async def test_random_bytes(live: tuple[BrokerController, RemotingClient], data: bytes) -> None:
    broker, client = live
    before = stored(broker)
    response = await exchange(broker, data, half_close=True)
    if response is not None:
        assert response.code != ResponseCode.SUCCESS
    assert stored(broker) == before
    await still_healthy(broker, client)


@FUZZ
@given(
    code=CODES,
    cut=st.integers(min_value=0, max_value=10_000),
    header_length=st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    json_garbage=st.sampled_from([b"", b'{"code": 310, ', b"[1,2]", b"null", b"\xff\xfe", b"{}"]),
)
async def test_truncated_and_garbled_frames(
    live: tuple[BrokerController, RemotingClient],
    code: int,
    cut: int,
    header_length: int | None,
    json_garbage: bytes,
) -> None:
    broker, client = live
    frame = json_frame(request_header(code, valid_ext(code, broker)), b"body")
    if header_length is not None:
        # A header length that disagrees with the frame (often beyond it).
        frame = frame[:4] + struct.pack(">i", header_length) + frame[8:]
    if json_garbage:
        raw = json_garbage
        frame = struct.pack(">ii", 4 + len(raw), len(raw)) + raw
    truncated = frame[: cut % (len(frame) + 1)]
    before = stored(broker)
    response = await exchange(broker, truncated, half_close=True)
    if response is not None and response.code == ResponseCode.SUCCESS:
        # Only a complete, well-formed frame can succeed.
        assert truncated == frame and header_length is None and not json_garbage
    else:
        assert stored(broker) == before
    await still_healthy(broker, client)


# --- (b) a 20 MiB length prefix -----------------------------------------------------------------


async def test_20_mib_length_prefix_closes(live: tuple[BrokerController, RemotingClient]) -> None:
    broker, client = live
    before = stored(broker)
    raw = await RawConnection.open("127.0.0.1", broker.port)
    try:
        with contextlib.suppress(ConnectionError):
            await raw.send(struct.pack(">i", 20 * 1024 * 1024) + b"\x00" * 1024)
        async with asyncio.timeout(WAIT_S):
            with contextlib.suppress(ConnectionError):
                await raw.wait_eof()
    finally:
        await raw.close()
    assert stored(broker) == before
    await still_healthy(broker, client)


# --- (c) huge batches ---------------------------------------------------------------------------


def batch_request(messages: list[Message]) -> RemotingCommand:
    header = send_header(TOPIC, batch=True)
    return send_request(RequestCode.SEND_BATCH_MESSAGE, header, batch_body(messages))


async def test_batch_of_10000_tiny_messages(
    live: tuple[BrokerController, RemotingClient],
) -> None:
    broker, client = live
    before_phy, before_queues = stored(broker)
    messages = [Message(topic=TOPIC, body=b"x") for _ in range(10_000)]
    response = await client.invoke(broker.address, batch_request(messages), 10.0)
    assert await asyncio.to_thread(broker.message_store.wait_for_dispatch, 10.0)
    after_phy, after_queues = stored(broker)
    if response.code == ResponseCode.SUCCESS:
        assert after_phy > before_phy
        assert after_queues[0] == before_queues[0] + 10_000
    else:
        assert response.code == ResponseCode.MESSAGE_ILLEGAL, response.remark
        assert (after_phy, after_queues) == (before_phy, before_queues)
    await still_healthy(broker, client)


async def test_batch_beyond_max_message_size_is_illegal(
    live: tuple[BrokerController, RemotingClient],
) -> None:
    broker, client = live
    limit = broker.store_config.max_message_size
    before = stored(broker)
    count = limit // 1024 + 8
    messages = [Message(topic=TOPIC, body=b"y" * 1024) for _ in range(count)]
    response = await client.invoke(broker.address, batch_request(messages), 10.0)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL, (response.code, response.remark)
    assert stored(broker) == before
    await still_healthy(broker, client)

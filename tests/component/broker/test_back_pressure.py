"""Back-pressure from storage (R10) against a real broker over sockets, its disk slowed by a
FaultInjectingFileSystem: the page cache busy answers ([REJECTREQUEST], [PC_SYNCHRONIZED]),
the send queue's fast failure ([TIMEOUT_CLEAN_QUEUE], [PCBUSY_CLEAN_QUEUE]), and
brokerFastFailureEnable=false."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import SocketAddress
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import ChannelContext, RemotingClient
from orbitmq.testing import FaultInjectingFileSystem
from tests.component.broker.conftest import pull_all, send, send_header, send_request
from tests.eventually import eventually_async
from tests.support import make_message, small_config

pytestmark = pytest.mark.timeout(30)

TOPIC = "BackPressureTopic"
PC_SYNCHRONIZED = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
CLEARED = re.compile(
    r"\[(TIMEOUT|PCBUSY)_CLEAN_QUEUE\]broker busy, start flow control for a while, "
    r"period in queue: (\d+)ms, size of queue: (\d+)"
)

SlowBroker = Callable[..., Awaitable[tuple[BrokerController, FaultInjectingFileSystem]]]


@pytest.fixture
async def slow_broker(tmp_path: Path) -> AsyncIterator[SlowBroker]:
    made: list[BrokerController] = []

    async def factory(
        busy_timeout_ms: int = 1000, **settings: object
    ) -> tuple[BrokerController, FaultInjectingFileSystem]:
        config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0)
        for key, value in settings.items():
            setattr(config, key, value)
        store = small_config(tmp_path / "store", os_page_cache_busy_time_out_mills=busy_timeout_ms)
        fs = FaultInjectingFileSystem()
        controller = BrokerController(config, store, fs=fs)
        await controller.start()
        made.append(controller)
        return controller, fs

    yield factory
    for controller in made:
        await controller.stop()


def request(body: bytes) -> RemotingCommand:
    return send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), body)


class _Peer:
    """The connection a send was admitted on, for calling the processor the way the
    transport does once a request has passed ``reject_request``."""

    remote_address = "127.0.0.1:50000"
    remote_socket_address: SocketAddress = ("127.0.0.1", 50000)


async def _slow_first_append(
    broker: BrokerController, client: RemotingClient, fs: FaultInjectingFileSystem, delay_s: float
) -> None:
    """Store one message fast (the topic exists), then one whose append takes ``delay_s``:
    the broker now appends on its send queue's thread."""
    assert (await send(client, broker, request(b"warm"))).code == ResponseCode.SUCCESS
    fs.write_delay_s = delay_s
    assert (await send(client, broker, request(b"slow"))).code == ResponseCode.SUCCESS
    assert broker.send_message_processor.send_queue.off_loop


async def test_a_put_lock_held_too_long_answers_busy(
    slow_broker: SlowBroker, client: RemotingClient
) -> None:
    broker, fs = await slow_broker(busy_timeout_ms=200)
    assert (await send(client, broker, request(b"warm"))).code == ResponseCode.SUCCESS
    store = broker.message_store
    # Another writer (as the schedule service delivering) holds the put lock on a slow disk.
    fs.write_delay_s = 0.8
    holder = asyncio.ensure_future(asyncio.to_thread(store.put_message, make_message(TOPIC)))
    await eventually_async(store.commit_log.is_os_page_cache_busy)

    # A send arriving now is refused before it is queued (RocketMQ's rejectRequest)...
    refused = await send(client, broker, request(b"refused"))
    assert refused.code == ResponseCode.SYSTEM_BUSY
    assert refused.remark == "[REJECTREQUEST]system busy, start flow control for a while"
    # ...and one admitted just before reaches the store, which refuses it without waiting
    # for the lock.
    processor = broker.send_message_processor
    admitted = await processor.process_request(cast(ChannelContext, _Peer()), request(b"admitted"))
    assert admitted is not None
    assert (admitted.code, admitted.remark) == (ResponseCode.SYSTEM_BUSY, PC_SYNCHRONIZED)

    assert (await holder).is_ok
    fs.write_delay_s = 0
    assert (await send(client, broker, request(b"after"))).code == ResponseCode.SUCCESS
    bodies = [m.body for m in await pull_all(client, broker, TOPIC, 3)]
    assert bodies[0] == b"warm" and bodies[2] == b"after"  # nothing refused was stored


async def test_a_send_that_waited_over_wait_time_mills_in_send_queue_is_cleared(
    slow_broker: SlowBroker, client: RemotingClient
) -> None:
    broker, fs = await slow_broker(wait_time_mills_in_send_queue=200)
    await _slow_first_append(broker, client, fs, 0.5)
    # Three sends at once: the first appends (0.5 s) while the other two wait in the queue.
    answers = await asyncio.gather(*(send(client, broker, request(b"q%d" % i)) for i in range(3)))

    assert answers[0].code == ResponseCode.SUCCESS
    for answer in answers[1:]:
        assert answer.code == ResponseCode.SYSTEM_BUSY
        match = CLEARED.fullmatch(answer.remark or "")
        assert match and match.group(1) == "TIMEOUT", answer.remark
        assert 200 <= int(match.group(2)) < 2000  # cleared once over the limit
    assert broker.send_message_processor.send_queue.cleared == 2

    fs.write_delay_s = 0
    assert (await send(client, broker, request(b"after"))).code == ResponseCode.SUCCESS
    bodies = [m.body for m in await pull_all(client, broker, TOPIC, 4)]
    assert bodies == [b"warm", b"slow", b"q0", b"after"]  # the cleared sends were not stored


async def test_sends_queued_while_the_page_cache_is_busy_are_cleared(
    slow_broker: SlowBroker, client: RemotingClient
) -> None:
    broker, fs = await slow_broker(busy_timeout_ms=200, wait_time_mills_in_send_queue=5000)
    await _slow_first_append(broker, client, fs, 0.6)
    queue = broker.send_message_processor.send_queue
    # The queue's thread appends one (0.6 s, over the 200 ms busy time); the next two wait.
    first = asyncio.ensure_future(send(client, broker, request(b"first")))
    waiting = [asyncio.ensure_future(send(client, broker, request(b"w%d" % i))) for i in range(2)]
    for answer in await asyncio.gather(*waiting):
        assert answer.code == ResponseCode.SYSTEM_BUSY
        match = CLEARED.fullmatch(answer.remark or "")
        assert match and match.group(1) == "PCBUSY", answer.remark
    assert (await first).code == ResponseCode.SUCCESS
    assert queue.cleared == 2


async def test_without_fast_failure_queued_sends_wait_and_are_stored(
    slow_broker: SlowBroker, client: RemotingClient
) -> None:
    broker, fs = await slow_broker(broker_fast_failure_enable=False)
    await _slow_first_append(broker, client, fs, 0.4)
    answers = await asyncio.gather(*(send(client, broker, request(b"q%d" % i)) for i in range(3)))

    # The last waited about 0.8 s, four times waitTimeMillsInSendQueue: stored all the same.
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 3
    assert broker.send_message_processor.send_queue.cleared == 0
    fs.write_delay_s = 0
    bodies = [m.body for m in await pull_all(client, broker, TOPIC, 5)]
    assert bodies == [b"warm", b"slow", b"q0", b"q1", b"q2"]


async def test_the_pull_and_send_executors_take_their_wait_limits_from_the_config(
    slow_broker: SlowBroker,
) -> None:
    broker, _ = await slow_broker(wait_time_mills_in_pull_queue=3000)
    table = broker.remoting_server.table.registrations
    pull = table[RequestCode.PULL_MESSAGE].executor
    send_executor = table[RequestCode.SEND_MESSAGE_V2].executor
    assert pull.max_wait_ms is not None and send_executor.max_wait_ms is not None
    assert (pull.max_wait_ms(), send_executor.max_wait_ms()) == (3000, 200)
    broker.broker_config.broker_fast_failure_enable = False
    assert (pull.max_wait_ms(), send_executor.max_wait_ms()) == (None, None)


async def test_once_an_append_is_fast_again_sends_do_not_wait_behind_queued_ones(
    slow_broker: SlowBroker, client: RemotingClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A send still queued for the thread must not hold back the sends after it once the
    disk is fast again: at a steady send rate the queue would never drain, and its sends
    would time out waiting for the thread."""
    broker, fs = await slow_broker()
    await _slow_first_append(broker, client, fs, 0.2)
    fs.write_delay_s = 0
    store = broker.message_store
    real_append = store.append
    release = threading.Event()

    def stalled_append(*args: Any, **kwargs: Any) -> Any:
        release.wait(10)  # the queued send's append has not begun
        return real_append(*args, **kwargs)

    monkeypatch.setattr(store, "append", stalled_append)
    queued = asyncio.ensure_future(send(client, broker, request(b"queued")))
    await asyncio.sleep(0.1)
    monkeypatch.setattr(store, "append", real_append)
    # Another writer's append (as the schedule service delivering) is fast: the disk is well.
    assert (await asyncio.to_thread(store.put_message, make_message(TOPIC, body=b"other"))).is_ok
    try:
        after = await asyncio.wait_for(send(client, broker, request(b"after")), 2)
        assert after.code == ResponseCode.SUCCESS
        assert not queued.done()
    finally:
        release.set()
    assert (await queued).code == ResponseCode.SUCCESS

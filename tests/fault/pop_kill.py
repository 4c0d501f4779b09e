"""POP across kill -9 of a real ``orbitmq start``: what was acked never comes back, what
was popped and not acked comes back after its invisible time, what was never popped is
still there. Shared by the short e2e test and the longer fault test."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from orbitmq.common import message_const as mc
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import AckMessageRequestHeader
from orbitmq.protocol.pop_extra_info import ExtraInfo
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import send_header, send_request
from tests.component.broker.pop_support import PopAnswer, pop_request
from tests.support import SMALL_STORE_CONF, start_orbitmq

TOPIC = "PopKillTopic"
GROUP = "pop-kill"
INVISIBLE_MS = 3000
#: consumerOffset.json is never saved before the kill: the restart must recover the POP
#: offsets from the revive log alone.
CONF = SMALL_STORE_CONF + "flushConsumerOffsetInterval=600000\nreviveInterval=200\n"


async def _send_all(broker: str, count: int) -> None:
    client = RemotingClient(connect_timeout_s=5.0)
    try:
        for i in range(count):
            header = send_header(TOPIC, {mc.PROPERTY_KEYS: str(i)}, queue_id=i % 4)
            request = send_request(RequestCode.SEND_MESSAGE_V2, header, f"m{i:05d}".encode())
            response = await client.invoke(broker, request, 5.0)
            assert response.code == ResponseCode.SUCCESS, response.remark
    finally:
        await client.close()


async def _pop(client: RemotingClient, broker: str, poll_ms: int) -> PopAnswer:
    request = pop_request(
        TOPIC,
        group=GROUP,
        max_msg_nums=16,
        invisible_ms=INVISIBLE_MS,
        poll_ms=poll_ms,
        born_time=int(time.time() * 1000),
    )
    response = await client.invoke(broker, request, poll_ms / 1000 + 5)
    return PopAnswer(response, "broker-a")


async def _ack(client: RemotingClient, broker: str, answer: PopAnswer, index: int) -> None:
    message = answer.messages[index]
    extra = message.properties[mc.PROPERTY_POP_CK]
    header = AckMessageRequestHeader(
        consumer_group=GROUP,
        topic=ExtraInfo.parse(extra).real_topic(message.topic, GROUP),
        queue_id=message.queue_id,
        extra_info=extra,
        offset=message.queue_offset,
    )
    request = RemotingCommand.create_request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
    response = await client.invoke(broker, request, 5.0)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def _consume_before(broker: str, pops: int) -> tuple[set[bytes], set[bytes]]:
    """Pop ``pops`` times; ack every other message. The bodies acked in time, and those
    acked late: an ack answered after the message's invisible time may come too late (the
    message was revived already: RocketMQ answers such an ack SUCCESS and changes nothing),
    so a late one may come back. "In time" is counted from before the POP was sent, which
    is never later than the broker's pop time."""
    acked: set[bytes] = set()
    late: set[bytes] = set()
    client = RemotingClient(connect_timeout_s=5.0)
    try:
        for _ in range(pops):
            asked_at = time.monotonic()
            answer = await _pop(client, broker, 1000)
            for i, message in enumerate(answer.messages):
                if i % 2 == 0:
                    await _ack(client, broker, answer, i)
                    in_time = time.monotonic() - asked_at < INVISIBLE_MS / 1000
                    (acked if in_time else late).add(message.body)
    finally:
        await client.close()
    return acked, late


async def _consume_after(broker: str, expected: set[bytes], acked: set[bytes]) -> set[bytes]:
    """Pop and ack until every ``expected`` body came; fail on any ``acked`` one (bodies in
    neither set, acked late, may come). Then one more long poll past the invisible time must
    find nothing left."""
    seen: set[bytes] = set()
    client = RemotingClient(connect_timeout_s=5.0)
    try:
        deadline = time.monotonic() + 60
        while not expected <= seen:
            assert time.monotonic() < deadline, f"missing {sorted(expected - seen)[:10]}"
            answer = await _pop(client, broker, 2000)
            for i, message in enumerate(answer.messages):
                assert message.body not in acked, f"acked {message.body!r} came back"
                seen.add(message.body)
                await _ack(client, broker, answer, i)
        # Past every invisible time: nothing comes back (acked stays acked).
        answer = await _pop(client, broker, INVISIBLE_MS + 1500)
        for message in answer.messages:
            assert message.body not in acked, f"acked {message.body!r} came back"
            assert message.body not in seen, f"{message.body!r} came back after its ack"
    finally:
        await client.close()
    return seen


def run_pop_kill(tmp_path: Path, count: int, pops: int, rounds: int = 1) -> None:
    """Send ``count`` messages, then ``rounds`` times: pop ``pops`` batches (acking half)
    and kill -9 the broker; after the last restart check every message is accounted for."""
    conf = tmp_path / "pop.conf"
    conf.write_text(CONF)
    data_dir = tmp_path / "data"
    process, ready = start_orbitmq(data_dir, tmp_path / "run0", conf)
    acked: set[bytes] = set()
    late: set[bytes] = set()
    try:
        asyncio.run(_send_all(ready.group(2), count))
        for round_no in range(1, rounds + 1):
            newly_acked, newly_late = asyncio.run(_consume_before(ready.group(2), pops))
            assert not newly_acked & acked
            acked |= newly_acked
            late |= newly_late
            process.kill()  # SIGKILL: no shutdown, no offsets saved
            process.wait(timeout=30)
            process, ready = start_orbitmq(data_dir, tmp_path / f"run{round_no}", conf)
        everything = {f"m{i:05d}".encode() for i in range(count)}
        late -= acked  # acked in time in a later round
        expected = everything - acked - late
        seen = asyncio.run(_consume_after(ready.group(2), expected, acked))
        assert expected <= seen <= everything - acked
        # On a machine not overloaded, every ack is in time: the check is not hollow.
        assert len(acked) >= 2 * len(late), (len(acked), len(late))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


FIFO_TOPIC = "PopKillFifo"


async def _fifo_pop(client: RemotingClient, broker: str) -> PopAnswer:
    request = pop_request(
        FIFO_TOPIC,
        group=GROUP,
        queue_id=0,
        max_msg_nums=4,
        invisible_ms=INVISIBLE_MS,
        poll_ms=1000,
        born_time=int(time.time() * 1000),
        order=True,
    )
    return PopAnswer(await client.invoke(broker, request, 10.0), "broker-a")


async def _fifo_round(broker: str, batches: int | None, count: int) -> list[bytes]:
    """Pop FIFO batches from queue 0 and ack each in full: ``batches`` of them, or (None)
    until ``count`` messages came. The bodies in the order they came."""
    bodies: list[bytes] = []
    client = RemotingClient(connect_timeout_s=5.0)
    try:
        deadline = time.monotonic() + 60
        while (len(bodies) < count) if batches is None else (batches > 0):
            assert time.monotonic() < deadline, f"FIFO stuck after {bodies[-3:]}"
            answer = await _fifo_pop(client, broker)
            for i, message in enumerate(answer.messages):
                bodies.append(message.body)
                await _ack_fifo(client, broker, answer, i)
            if answer.messages and batches is not None:
                batches -= 1
    finally:
        await client.close()
    return bodies


async def _ack_fifo(client: RemotingClient, broker: str, answer: PopAnswer, index: int) -> None:
    message = answer.messages[index]
    header = AckMessageRequestHeader(
        consumer_group=GROUP,
        topic=FIFO_TOPIC,
        queue_id=0,
        extra_info=message.properties[mc.PROPERTY_POP_CK],
        offset=message.queue_offset,
    )
    request = RemotingCommand.create_request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
    response = await client.invoke(broker, request, 5.0)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def _send_fifo(broker: str, count: int) -> None:
    client = RemotingClient(connect_timeout_s=5.0)
    try:
        for i in range(count):
            header = send_header(FIFO_TOPIC, {}, queue_id=0)
            request = send_request(RequestCode.SEND_MESSAGE_V2, header, f"f{i:04d}".encode())
            response = await client.invoke(broker, request, 5.0)
            assert response.code == ResponseCode.SUCCESS, response.remark
    finally:
        await client.close()


def run_fifo_kill(tmp_path: Path, count: int, batches: int) -> None:
    """FIFO POP across kill -9: the acked prefix of a queue is not handed out again, the
    rest comes in order."""
    conf = tmp_path / "pop.conf"
    conf.write_text(CONF)
    data_dir = tmp_path / "data"
    process, ready = start_orbitmq(data_dir, tmp_path / "fifo0", conf)
    try:
        asyncio.run(_send_fifo(ready.group(2), count))
        before = asyncio.run(_fifo_round(ready.group(2), batches, count))
        assert before == [f"f{i:04d}".encode() for i in range(len(before))]
        process.kill()
        process.wait(timeout=30)
        process, ready = start_orbitmq(data_dir, tmp_path / "fifo1", conf)
        after = asyncio.run(_fifo_round(ready.group(2), None, count - len(before)))
        assert after == [f"f{i:04d}".encode() for i in range(len(before), count)]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

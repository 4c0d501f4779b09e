"""Bad input on a SYNC_MASTER broker process's HA port (issue 16 §5).

``tests/component/store/test_ha_bad_input.py`` covers each kind of bad input against an
HAService in the test's own process. Here the master is an ``orbitmq broker`` process with a
real slave (``tests/fault/ha_pair.py``), and what matters is the pair's promise:

- garbage, a negative offset, a report beyond the master's log and a peer that never reads
  each end only their own connection: the master process stays up, logs what happened, and
  its sends go on being answered SEND_OK through the real slave;
- a peer's claim to hold more than the master ever streamed to it acknowledges nothing:
  with the real slave stopped, an impostor that reports an offset beyond the log gets the
  master's sends answered FLUSH_SLAVE_TIMEOUT, never SEND_OK.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from orbitmq.client import AdminClient, ClientConfig, MQClientAPI, Producer, SendStatus
from orbitmq.common import Message, MessageQueue
from orbitmq.remoting import RemotingClient
from tests.eventually import eventually_async
from tests.fault.ha_ledger import Ledger, missing_on, send_keyed, wait_for_topic
from tests.fault.ha_pair import BROKER_NAME, HaPair

TOPIC = "HaBadInputTopic"
#: The slave reports every second (FAST_HA_CONF): 2 s of silence is a gone peer.
HOUSEKEEPING_MS = 2000
MASTER_CONF = f"slaveTimeout=500\nhaHousekeepingInterval={HOUSEKEEPING_MS}\n"
WAIT_S = 30.0
REPORT = struct.Struct(">q")
#: More than the master's send buffer and a never-reading peer's receive buffer hold
#: (random: the producer compresses a body over 4 KiB).
BIG_BODY = os.urandom(1_000_000)
BIG_SENDS = 16


def _ha_socket(pair: HaPair, *, rcvbuf: int = 0) -> socket.socket:
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", pair.ha_port))
    return sock


@contextmanager
def reporting(sock: socket.socket, offset: int) -> Iterator[None]:
    """A thread reports ``offset`` on ``sock`` every 100 ms (so the peer is not silent),
    and reads nothing."""
    stop = threading.Event()

    def report() -> None:
        while not stop.wait(0.1):
            try:
                sock.sendall(REPORT.pack(offset))
            except OSError:
                return

    thread = threading.Thread(target=report)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _wait_closed(sock: socket.socket) -> None:
    """Until the master closes ``sock`` (reading and dropping what it streamed)."""
    sock.settimeout(WAIT_S)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass


async def _send_ok(producer: Producer, ledger: Ledger, key: str) -> None:
    """Sends go on being acknowledged: one is answered SEND_OK (on a loaded machine a
    send may miss slaveTimeout now and then; it is stored all the same)."""

    async def probe() -> bool:
        return await send_keyed(producer, TOPIC, key, ledger) is SendStatus.SEND_OK

    await eventually_async(probe, WAIT_S, 0.05, what=f"SEND_OK for {key}")


async def _answered(producer: Producer, wanted: SendStatus, what: str) -> None:
    async def probe() -> bool:
        return await send_keyed(producer, TOPIC, "probe", Ledger()) is wanted

    await eventually_async(probe, WAIT_S, 0.1, what=what)


async def _logged(pair: HaPair, text: str) -> None:
    await eventually_async(lambda: text in pair.master_log(), WAIT_S, 0.05, what=repr(text))


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_bad_input_on_the_ha_port_neither_stops_nor_fools_the_master(
    tmp_path: Path,
) -> None:
    with HaPair(tmp_path, master_extra=MASTER_CONF) as pair:
        async with AdminClient(namesrv_addr=pair.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queue_nums=2)
        api = MQClientAPI(RemotingClient())
        config = ClientConfig(namesrv_addr=pair.namesrv_addr)
        ledger = Ledger()
        try:
            await wait_for_topic(api, pair.slave_addr, MessageQueue(TOPIC, BROKER_NAME, 0), WAIT_S)
            async with Producer("ha-bad-input-pg", client_config=config) as producer:
                await _answered(producer, SendStatus.SEND_OK, "the slave connected")
                await bad_peers(pair, producer, ledger)
                assert pair.master is not None and pair.master.running
                problems = await missing_on(
                    api, pair.slave_addr, TOPIC, BROKER_NAME, ledger.acks, WAIT_S
                )
                assert not problems, problems[:10]

                assert pair.slave is not None
                pair.slave.stop()
                await _answered(producer, SendStatus.SLAVE_NOT_AVAILABLE, "the slave gone")
                await an_impostor_acknowledges_nothing(pair, producer, ledger)
                assert pair.master.running
        finally:
            await api.remoting.close()


async def bad_peers(pair: HaPair, producer: Producer, ledger: Ledger) -> None:
    """Each bad peer in turn; the real slave's sends go on meanwhile."""
    with _ha_socket(pair) as negative:
        negative.sendall(b"\xff" * 8)  # -1: not an offset
        _wait_closed(negative)
    await _logged(pair, "closed: bad report -1")
    await _send_ok(producer, ledger, "after-negative")

    with _ha_socket(pair) as http:
        http.sendall(b"GET / HTTP/1.1\r\n\r\n")  # reads as a report of a huge offset
        await _logged(pair, "beyond this master's log as recovered")
        await _send_ok(producer, ledger, "after-garbage")

    with _ha_socket(pair, rcvbuf=4096) as deaf, reporting(deaf, 0):
        # It asked for the log from 0 and reads none of it: the master's writes to it block
        # until it gives up on it; the real slave's connection is not held up meanwhile.
        for _ in range(BIG_SENDS):
            result = await producer.send(Message(TOPIC, BIG_BODY))
            assert result.send_status is not SendStatus.SLAVE_NOT_AVAILABLE
        await _logged(pair, f"the slave read nothing for {HOUSEKEEPING_MS} ms")
    await _send_ok(producer, ledger, "after-deaf")


async def an_impostor_acknowledges_nothing(
    pair: HaPair, producer: Producer, ledger: Ledger
) -> None:
    """With no real slave, a peer that asks for the log and then claims an offset far beyond
    it is a connected slave (sends wait for it) but acknowledges none of them."""
    with _ha_socket(pair) as impostor:
        impostor.sendall(REPORT.pack(0))
        with reporting(impostor, 10**15):
            await _logged(pair, "reports offset 1000000000000000, beyond this master's max")
            for i in range(3):
                status = await send_keyed(producer, TOPIC, f"impostor-{i}", ledger)
                assert status is SendStatus.FLUSH_SLAVE_TIMEOUT, status

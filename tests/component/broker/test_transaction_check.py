"""The broker's transaction check-back (R35) against a real BrokerController on a ManualClock,
with a raw RemotingClient as the producer: it registers its group with HEART_BEAT, records
every CHECK_TRANSACTION_STATE and answers with END_TRANSACTION (fromTransactionCheck)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.broker.transactional_message_check_service import TransactionalMessageCheckService
from orbitmq.common import MessageExt, decode_message
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.topic import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC
from orbitmq.protocol import (
    HeartbeatData,
    ProducerData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
)
from orbitmq.protocol.header import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from orbitmq.remoting import ChannelContext, RemotingClient
from orbitmq.store import GetMessageStatus
from orbitmq.testing import ManualClock
from tests.component.broker.conftest import send, send_header, send_request, sent_header
from tests.support import small_config

pytestmark = pytest.mark.timeout(60)

GROUP = "tx-check-pg"
TOPIC = "TxCheckTopic"
BORN_MS = 1_700_000_000_000
TIMEOUT_MS = 6000
CHECK_MAX = 3

Check = tuple[CheckTransactionStateRequestHeader, MessageExt]


class CheckRecorder:
    """The producer side of CHECK_TRANSACTION_STATE: records each check for the test to answer."""

    def __init__(self) -> None:
        self.checks: asyncio.Queue[Check] = asyncio.Queue()

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        assert request.code == RequestCode.CHECK_TRANSACTION_STATE
        header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
        await self.checks.put((header, decode_message(request.body)))
        return None

    async def next_check(self) -> Check:
        async with asyncio.timeout(5):
            return await self.checks.get()


class Producer:
    """A raw producer connection: heartbeats, half sends, verdicts."""

    def __init__(self) -> None:
        self.client = RemotingClient(connect_timeout_s=2.0)
        self.recorder = CheckRecorder()
        self.client.table.register_processor(RequestCode.CHECK_TRANSACTION_STATE, self.recorder)

    async def register(self, broker: BrokerController) -> None:
        data = HeartbeatData(
            client_id="tx-producer@1", producer_data_set=[ProducerData(group_name=GROUP)]
        )
        request = RemotingCommand.create_request(RequestCode.HEART_BEAT, body=data.to_json())
        response = await self.client.invoke(broker.address, request, 5.0)
        assert response.code == ResponseCode.SUCCESS

    async def send_half(
        self, broker: BrokerController, body: bytes, uniq_key: str, **extra: str
    ) -> None:
        properties = {
            mc.PROPERTY_TRANSACTION_PREPARED: "true",
            mc.PROPERTY_PRODUCER_GROUP: GROUP,
            mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: uniq_key,
            mc.PROPERTY_KEYS: f"key-{uniq_key}",
            **extra,
        }
        header = send_header(
            TOPIC,
            properties,
            queue_id=1,
            producer_group=GROUP,
            born_timestamp=BORN_MS,
            sys_flag=sf.TRANSACTION_PREPARED_TYPE,
        )
        sent_header(
            await send(self.client, broker, send_request(RequestCode.SEND_MESSAGE, header, body))
        )

    async def answer(
        self, broker: BrokerController, check: CheckTransactionStateRequestHeader, verdict: int
    ) -> None:
        header = EndTransactionRequestHeader(
            producer_group=GROUP,
            tran_state_table_offset=check.tran_state_table_offset,
            commit_log_offset=check.commit_log_offset,
            commit_or_rollback=verdict,
            from_transaction_check=True,
            msg_id=check.msg_id or "",
            transaction_id=check.transaction_id,
        )
        request = RemotingCommand.create_request(
            RequestCode.END_TRANSACTION, header.to_ext_fields()
        )
        if verdict == sf.TRANSACTION_NOT_TYPE:
            await self.client.invoke_oneway(broker.address, request)  # no answer comes
        else:
            response = await self.client.invoke(broker.address, request, 5.0)
            assert response.code == ResponseCode.SUCCESS, response.remark


@pytest.fixture
async def producer() -> AsyncIterator[Producer]:
    made = Producer()
    yield made
    await made.client.close()


BrokerStarter = Callable[[], Awaitable[BrokerController]]


@pytest.fixture
async def clock() -> ManualClock:
    return ManualClock(BORN_MS)


@pytest.fixture
async def start_broker(tmp_path: Path, clock: ManualClock) -> AsyncIterator[BrokerStarter]:
    """Starts a broker on the one store directory (again after a stop: a restart); the last
    one started is stopped at the end."""
    running: list[BrokerController] = []

    async def start() -> BrokerController:
        config = BrokerConfig(
            broker_name="broker-a",
            broker_ip1="127.0.0.1",
            listen_port=0,
            transaction_time_out=TIMEOUT_MS,
            transaction_check_max=CHECK_MAX,
            # Passes are run by the tests, on the manual clock.
            transaction_check_interval=3_600_000,
        )
        controller = BrokerController(config, small_config(tmp_path / "store"), clock=clock)
        await controller.start()
        running.append(controller)
        return controller

    yield start
    if running:  # the tests stop every broker but the last themselves
        await running[-1].stop()


def checker(broker: BrokerController) -> TransactionalMessageCheckService:
    service = broker.transactional_message_check_service
    assert service is not None
    return service


async def settle(broker: BrokerController) -> None:
    store = broker.message_store
    assert await asyncio.to_thread(
        store.reput_message_service.wait_for_dispatch, store.commit_log.max_offset, 10
    )


async def check_pass(broker: BrokerController) -> None:
    await settle(broker)
    await checker(broker).check()
    await settle(broker)


def stored(broker: BrokerController, topic: str, queue_id: int) -> list[MessageExt]:
    result = broker.message_store.get_message("", topic, queue_id, 0, 64)
    if result.status is not GetMessageStatus.FOUND:
        return []
    return [decode_message(buffer) for buffer in result.message_buffers]


def half_queue_end(broker: BrokerController) -> int:
    return broker.message_store.get_max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0)


async def no_check_arrives(producer: Producer, broker: BrokerController) -> None:
    # A round trip on the connection lets a check already written arrive first.
    await producer.register(broker)
    assert producer.recorder.checks.empty()


async def test_unknown_then_commit_on_the_second_check_makes_it_visible_once(
    start_broker: BrokerStarter, producer: Producer, clock: ManualClock
) -> None:
    broker = await start_broker()
    await producer.register(broker)
    await producer.send_half(broker, b"order-1", "UNIQ1")
    await check_pass(broker)  # younger than transactionTimeOut: not asked about yet
    await no_check_arrives(producer, broker)

    clock.advance(TIMEOUT_MS + 1)
    await check_pass(broker)
    first, body = await producer.recorder.next_check()
    assert body.topic == TOPIC and body.queue_id == 1 and body.body == b"order-1"
    assert body.properties[mc.PROPERTY_TRANSACTION_CHECK_TIMES] == "1"
    assert first.transaction_id == first.msg_id == "UNIQ1"
    assert first.tran_state_table_offset == 1  # the re-stored half, not the sent one
    half = broker.message_store.look_message_by_offset(first.commit_log_offset)
    assert half is not None and half.queue_offset == 1
    assert first.offset_msg_id == half.msg_id and first.broker_name == "broker-a"
    await producer.answer(broker, first, sf.TRANSACTION_NOT_TYPE)

    await check_pass(broker)
    second, body = await producer.recorder.next_check()
    assert body.properties[mc.PROPERTY_TRANSACTION_CHECK_TIMES] == "2"
    await producer.answer(broker, second, sf.TRANSACTION_COMMIT_TYPE)
    await producer.answer(broker, second, sf.TRANSACTION_COMMIT_TYPE)  # a retry: no copy
    await check_pass(broker)
    await no_check_arrives(producer, broker)
    assert [m.body for m in stored(broker, TOPIC, 1)] == [b"order-1"]
    assert checker(broker).discarded_count == 0


async def test_never_answered_is_discarded_after_exactly_the_max(
    start_broker: BrokerStarter, producer: Producer, clock: ManualClock
) -> None:
    broker = await start_broker()
    await producer.register(broker)
    await producer.send_half(broker, b"lost", "UNIQ2", custom="kept")
    clock.advance(TIMEOUT_MS + 1)
    for times in range(1, CHECK_MAX + 1):
        await check_pass(broker)
        _header, body = await producer.recorder.next_check()
        assert body.properties[mc.PROPERTY_TRANSACTION_CHECK_TIMES] == str(times)
    await check_pass(broker)
    await no_check_arrives(producer, broker)
    assert checker(broker).discarded_count == 1
    [discarded] = stored(broker, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 0)
    assert discarded.body == b"lost" and discarded.keys == ["key-UNIQ2"]
    assert discarded.properties["custom"] == "kept"
    assert discarded.properties[mc.PROPERTY_REAL_TOPIC] == TOPIC
    topic = broker.topic_config_manager.select_topic_config(RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
    assert topic is not None and topic.perm == 6
    assert (topic.read_queue_nums, topic.write_queue_nums) == (1, 1)

    await check_pass(broker)  # never asked about again
    await no_check_arrives(producer, broker)
    assert checker(broker).discarded_count == 1
    assert stored(broker, TOPIC, 1) == []


async def test_no_live_producer_waits_uncounted_until_one_registers(
    start_broker: BrokerStarter, producer: Producer, clock: ManualClock
) -> None:
    broker = await start_broker()
    await producer.send_half(broker, b"waiting", "UNIQ3")
    clock.advance(TIMEOUT_MS + 1)
    for _ in range(CHECK_MAX + 2):
        await check_pass(broker)
    assert half_queue_end(broker) == 1  # neither put back nor discarded
    assert checker(broker).discarded_count == 0

    await producer.register(broker)
    await check_pass(broker)
    check, body = await producer.recorder.next_check()
    assert body.properties[mc.PROPERTY_TRANSACTION_CHECK_TIMES] == "1"
    await producer.answer(broker, check, sf.TRANSACTION_ROLLBACK_TYPE)
    await check_pass(broker)
    await no_check_arrives(producer, broker)
    assert stored(broker, TOPIC, 1) == []


async def test_a_restart_between_checks_keeps_the_count_and_the_resolved_state(
    start_broker: BrokerStarter, producer: Producer, clock: ManualClock
) -> None:
    broker = await start_broker()
    await producer.register(broker)
    await producer.send_half(broker, b"survivor", "UNIQ4")
    await producer.send_half(broker, b"committed", "UNIQ5")
    clock.advance(TIMEOUT_MS + 1)
    await check_pass(broker)
    checks = [await producer.recorder.next_check() for _ in range(2)]
    committed = next(h for h, body in checks if body.body == b"committed")
    await producer.answer(broker, committed, sf.TRANSACTION_COMMIT_TYPE)
    await settle(broker)
    await broker.stop()

    broker = await start_broker()  # its start pass finds no producer yet
    await producer.register(broker)
    await check_pass(broker)
    _check, body = await producer.recorder.next_check()
    assert body.body == b"survivor"
    assert body.properties[mc.PROPERTY_TRANSACTION_CHECK_TIMES] == "2"
    await no_check_arrives(producer, broker)
    assert [m.body for m in stored(broker, TOPIC, 1)] == [b"committed"]


async def test_a_verdict_on_the_copy_before_a_put_back_reaches_the_current_copy(
    start_broker: BrokerStarter, producer: Producer, clock: ManualClock
) -> None:
    """A producer's commit that crosses the check-back's put-back (it names the half it
    sent, already put back as a new copy) commits the message, once, across a restart."""
    broker = await start_broker()
    await producer.register(broker)
    await producer.send_half(broker, b"late", "UNIQ8")
    await settle(broker)
    unit = broker.message_store.get_message_unit_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0, 0)
    assert unit is not None
    sent = CheckTransactionStateRequestHeader(
        tran_state_table_offset=0, commit_log_offset=unit[0], msg_id="UNIQ8", transaction_id="UNIQ8"
    )
    clock.advance(TIMEOUT_MS + 1)
    await check_pass(broker)
    put_back, _body = await producer.recorder.next_check()
    assert put_back.tran_state_table_offset == 1  # the half now lives as a new copy
    await broker.stop()

    broker = await start_broker()  # the put-back is known again from the op topic
    await producer.register(broker)
    await producer.answer(broker, sent, sf.TRANSACTION_COMMIT_TYPE)
    await producer.answer(broker, sent, sf.TRANSACTION_COMMIT_TYPE)  # a retry: no copy
    await check_pass(broker)
    await no_check_arrives(producer, broker)
    assert [m.body for m in stored(broker, TOPIC, 1)] == [b"late"]


async def test_a_half_resolved_normally_is_never_checked(
    start_broker: BrokerStarter, producer: Producer, clock: ManualClock
) -> None:
    broker = await start_broker()
    await producer.register(broker)
    await producer.send_half(broker, b"quick", "UNIQ6")
    await settle(broker)
    [half] = stored(broker, RMQ_SYS_TRANS_HALF_TOPIC, 0)
    verdict = CheckTransactionStateRequestHeader(
        tran_state_table_offset=half.queue_offset, commit_log_offset=half.commit_log_offset
    )
    await producer.answer(broker, verdict, sf.TRANSACTION_ROLLBACK_TYPE)
    clock.advance(TIMEOUT_MS + 1)
    await check_pass(broker)
    await no_check_arrives(producer, broker)
    assert half_queue_end(broker) == 1


async def test_a_half_with_its_own_immunity_time_waits_that_long(
    start_broker: BrokerStarter, producer: Producer, clock: ManualClock
) -> None:
    broker = await start_broker()
    await producer.register(broker)
    immune = {mc.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: "60"}
    await producer.send_half(broker, b"immune", "UNIQ7", **immune)
    await producer.send_half(broker, b"plain", "UNIQ8")
    clock.advance(TIMEOUT_MS + 1)
    await check_pass(broker)
    _check, body = await producer.recorder.next_check()
    assert body.body == b"plain"  # the immune half is skipped, not a stop
    await no_check_arrives(producer, broker)
    clock.advance(60_000)
    await check_pass(broker)
    bodies = {(await producer.recorder.next_check())[1].body for _ in range(2)}
    assert bodies == {b"immune", b"plain"}


async def test_a_late_commit_of_a_discarded_half_stores_it_once_across_restarts(
    start_broker: BrokerStarter, producer: Producer, clock: ManualClock
) -> None:
    broker = await start_broker()
    await producer.register(broker)
    await producer.send_half(broker, b"slow", "UNIQ9")
    clock.advance(TIMEOUT_MS + 1)
    checks = []
    for _ in range(CHECK_MAX):
        await check_pass(broker)
        checks.append((await producer.recorder.next_check())[0])
    await check_pass(broker)
    assert checker(broker).discarded_count == 1
    assert stored(broker, TOPIC, 1) == []

    # The producer's commit comes after the discard (RocketMQ's broker stores it too).
    await producer.answer(broker, checks[-1], sf.TRANSACTION_COMMIT_TYPE)
    await producer.answer(broker, checks[0], sf.TRANSACTION_COMMIT_TYPE)  # again: no copy
    await settle(broker)
    assert [m.body for m in stored(broker, TOPIC, 1)] == [b"slow"]

    await broker.stop()
    broker = await start_broker()
    await producer.register(broker)
    await producer.answer(broker, checks[-1], sf.TRANSACTION_COMMIT_TYPE)
    await check_pass(broker)
    await no_check_arrives(producer, broker)
    assert [m.body for m in stored(broker, TOPIC, 1)] == [b"slow"]

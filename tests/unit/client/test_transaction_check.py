"""The client side of a transaction check: the instance hands CHECK_TRANSACTION_STATE to
the transactional producer of the half's group (none: ignored), and ``call_listener`` runs
plain and ``async def`` listener methods, a failure counting as UNKNOW (and named in the
verdict's remark)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from typing import Any, cast

import pytest

from orbitmq.client import ClientConfig, LocalTransactionState, MQClientInstance
from orbitmq.client.transaction_listener import call_listener, failure_remark, run_listener
from orbitmq.common import MessageExt, encode_message
from orbitmq.common import message_const as mc
from orbitmq.protocol import RemotingCommand, RequestCode
from orbitmq.protocol.header import CheckTransactionStateRequestHeader
from orbitmq.remoting import ChannelContext

COMMIT = LocalTransactionState.COMMIT_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


class Context:
    remote_address = "10.0.0.9:10911"


class Checker:
    def __init__(self) -> None:
        self.checks: list[tuple[str, MessageExt, CheckTransactionStateRequestHeader]] = []

    def check_transaction_state(
        self, broker_addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        self.checks.append((broker_addr, msg, header))


def check_request(group: str, bname: str | None) -> RemotingCommand:
    half = MessageExt(
        topic="TxTopic",
        body=b"half",
        properties={
            mc.PROPERTY_PRODUCER_GROUP: group,
            mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U1",
        },
    )
    header = CheckTransactionStateRequestHeader(
        tran_state_table_offset=7,
        commit_log_offset=1234,
        msg_id="U1",
        transaction_id="U1",
        broker_name=bname,
    )
    request = RemotingCommand.create_request(
        RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), body=encode_message(half)
    )
    request.mark_oneway()
    return request


async def dispatch(instance: MQClientInstance, request: RemotingCommand) -> RemotingCommand | None:
    registration = instance.remoting.table.lookup(RequestCode.CHECK_TRANSACTION_STATE)
    assert registration is not None
    ctx = cast(ChannelContext, Context())
    return await registration.processor.process_request(ctx, request)


async def test_a_check_reaches_the_producer_of_the_halfs_group() -> None:
    instance = MQClientInstance(ClientConfig(namesrv_addr="127.0.0.1:1"))
    checker = Checker()
    instance.transaction_checkers["tx-g"] = checker
    instance.broker_addrs["broker-a"] = {0: "10.0.0.1:10911"}

    assert await dispatch(instance, check_request("tx-g", "broker-a")) is None  # oneway
    assert await dispatch(instance, check_request("tx-g", None)) is None
    assert await dispatch(instance, check_request("other-g", "broker-a")) is None

    [(addr, msg, header), (addr_without_name, _, _)] = checker.checks
    # The broker's listening address by its name; without a name, the connection's peer.
    assert (addr, addr_without_name) == ("10.0.0.1:10911", Context.remote_address)
    assert (msg.body, msg.unique_key) == (b"half", "U1")
    assert (header.tran_state_table_offset, header.commit_log_offset) == (7, 1234)


@pytest.fixture
def executor() -> Iterator[concurrent.futures.Executor]:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        yield pool


def commits(*_: Any) -> LocalTransactionState:
    return COMMIT


async def commits_later(*_: Any) -> LocalTransactionState:
    return COMMIT


def fails(*_: Any) -> LocalTransactionState:
    raise RuntimeError("the database is down")


def answers_nothing(*_: Any) -> Any:
    return None


async def test_call_listener_takes_plain_and_async_methods_and_a_failure_is_unknow(
    executor: concurrent.futures.Executor,
) -> None:
    assert await call_listener(commits, executor, "msg", "arg") is COMMIT
    assert await call_listener(commits_later, executor, "msg") is COMMIT
    assert await call_listener(fails, executor, "msg") is UNKNOW
    assert await call_listener(answers_nothing, executor, "msg") is UNKNOW


def test_unknown_is_rocketmqs_unknow() -> None:
    assert LocalTransactionState.UNKNOWN is UNKNOW


async def test_run_listener_hands_back_the_exception_for_the_remark(
    executor: concurrent.futures.Executor,
) -> None:
    state, error = await run_listener(fails, executor, "msg")
    assert state is UNKNOW and isinstance(error, RuntimeError)
    assert failure_remark("checkLocalTransactionState Exception", error) == (
        "checkLocalTransactionState Exception: RuntimeError: the database is down"
    )
    assert await run_listener(commits, executor, "msg") == (COMMIT, None)
    assert await run_listener(answers_nothing, executor, "msg") == (UNKNOW, None)
    assert failure_remark("executeLocalTransactionBranch exception", None) is None

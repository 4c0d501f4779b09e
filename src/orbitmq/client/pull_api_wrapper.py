"""``PullAPIWrapper``: which broker of a group a consumer pulls a queue from (RocketMQ's
``PullAPIWrapper`` with ``MQClientInstance.findBrokerAddressInSubscribe``).

Every pull answer carries ``suggestWhichBrokerId``: the master says 1 (the group's
whichBrokerWhenConsumeSlowly) when, with slaveReadEnable on, the pull read further behind the
head than the memory a master keeps for reads; the slave (or the master, once the consumer
has caught up) says 0. The next pull of that queue goes where the last answer said. A pull to
a slave never carries the commit-offset flag: a slave stores no offsets from pulls. Each
result says which broker served it (``PullResult.broker_id`` and ``broker_addr``)."""

from __future__ import annotations

import dataclasses

from orbitmq.client.consume_message_hook import MessageFilterHook
from orbitmq.client.errors import MQClientError
from orbitmq.client.find_broker import FindBrokerResult, find_broker_address_in_subscribe
from orbitmq.client.mq_client_instance import MQClientInstance
from orbitmq.client.pull_result import PullResult
from orbitmq.common import MessageQueue
from orbitmq.filter import SubscriptionData
from orbitmq.protocol.body import MASTER_ID
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import clear_commit_offset_flag


class PullAPIWrapper:
    """Owns one consumer's pullFromWhichNodeTable (queue -> broker id to pull from next).
    Use from the consumer's event loop."""

    def __init__(self, instance: MQClientInstance) -> None:
        self.instance = instance
        self._pull_from_which_node: dict[MessageQueue, int] = {}

    def update_pull_from_which_node(self, mq: MessageQueue, broker_id: int) -> None:
        self._pull_from_which_node[mq] = broker_id

    def recalculate_pull_from_which_node(self, mq: MessageQueue) -> int:
        return self._pull_from_which_node.get(mq, MASTER_ID)

    async def find_broker(self, mq: MessageQueue) -> FindBrokerResult:
        """Where ``mq``'s next pull goes, refreshing the topic's route once if need be."""
        broker_id = self.recalculate_pull_from_which_node(mq)
        addrs = self.instance.broker_addrs.get(mq.broker_name)
        found = find_broker_address_in_subscribe(addrs, broker_id, False)
        if found is None:
            await self.instance.update_topic_route(mq.topic)
            addrs = self.instance.broker_addrs.get(mq.broker_name)
            found = find_broker_address_in_subscribe(addrs, broker_id, False)
        if found is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return found

    async def pull_kernel(
        self,
        mq: MessageQueue,
        header: PullMessageRequestHeader,
        subscription: SubscriptionData | None,
        timeout_s: float,
        *,
        message_filter: MessageFilterHook | None = None,
    ) -> PullResult:
        """One pull of ``mq`` from the broker the last answer suggested; the answer's
        suggestion is kept for the next pull (RocketMQ's pullKernelImpl and
        processPullResult). The result names the broker that served it."""
        found = await self.find_broker(mq)
        if found.slave:
            header = dataclasses.replace(header, sys_flag=clear_commit_offset_flag(header.sys_flag))
        result = await self.instance.api.pull_message(
            found.broker_addr, header, subscription, timeout_s, message_filter=message_filter
        )
        self.update_pull_from_which_node(mq, result.suggest_which_broker_id)
        result.broker_id = found.broker_id
        return result

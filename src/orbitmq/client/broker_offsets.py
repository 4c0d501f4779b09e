"""``BrokerOffsets``: the remote offset store's way to the brokers; and ``offset_store_for``,
the store a consumer's message model calls for. Shared by the push and lite pull consumers."""

from __future__ import annotations

from orbitmq.client import mq_client_api
from orbitmq.client.consumer_config import ConsumerConfig
from orbitmq.client.mq_client_instance import MQClientInstance
from orbitmq.client.offset_store import (
    DEFAULT_LOCAL_OFFSET_STORE_DIR,
    LocalFileOffsetStore,
    OffsetNotFoundError,
    OffsetStore,
    RemoteBrokerOffsetStore,
)
from orbitmq.common import MessageQueue
from orbitmq.protocol import MessageModel


def offset_store_for(config: ConsumerConfig, instance: MQClientInstance, group: str) -> OffsetStore:
    """Clustering keeps progress at the brokers (R21), broadcasting in a local
    ``offsets.json`` (R22)."""
    if config.message_model is MessageModel.CLUSTERING:
        return RemoteBrokerOffsetStore(group, BrokerOffsets(instance))
    return LocalFileOffsetStore(
        instance.client_id, group, config.local_offset_store_dir or DEFAULT_LOCAL_OFFSET_STORE_DIR
    )


class BrokerOffsets:
    """QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET at the master of the queue's broker
    group, or at its slave while the route lists no master (the ``BrokerOffsetBackend`` of
    ``RemoteBrokerOffsetStore``, which uses RocketMQ's findBrokerAddressInAdmin): the slave
    keeps what is committed meanwhile, and the next periodic commit after the master is
    back takes the consumer's offsets to it. Holds only the instance."""

    def __init__(self, instance: MQClientInstance) -> None:
        self._instance = instance

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int:
        instance = self._instance
        found = await instance.find_broker_address_in_admin_or_fetch(mq.broker_name, mq.topic)
        try:
            return await instance.api.query_consumer_offset(
                found.broker_addr, group, mq, instance.config.mq_client_api_timeout_s
            )
        except mq_client_api.OffsetNotFoundError as exc:
            raise OffsetNotFoundError(str(exc)) from exc

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, oneway: bool
    ) -> None:
        instance = self._instance
        found = await instance.find_broker_address_in_admin_or_fetch(mq.broker_name, mq.topic)
        await instance.api.update_consumer_offset(
            found.broker_addr,
            group,
            mq,
            offset,
            instance.config.mq_client_api_timeout_s,
            oneway=oneway,
        )

"""``PopComponents``: RocketMQ 5's POP consumption in one broker, wired: the processors of
POP_MESSAGE, ACK_MESSAGE / BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, PEEK_MESSAGE,
NOTIFICATION and POLLING_INFO, the revive service, POP long polling, the FIFO order info,
and what a restart needs (docs/design/pop.md).

On-disk state, all under the store directory: the revive log (the system topic
``rmq_sys_REVIVE_LOG_<cluster>`` in the commit log and its consume queues), the revive
progress and the POP groups' offsets (``config/consumerOffset.json``),
``config/consumerOrderInfo.json`` (FIFO POP) and ``config/popRecoveryOffsets.json`` (each
revive queue's end when consumerOffset.json was last saved).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final

import orjson

from orbitmq.broker.ack_message_processor import AckMessageProcessor
from orbitmq.broker.change_invisible_time_processor import ChangeInvisibleTimeProcessor
from orbitmq.broker.consumer_order_info_manager import (
    CONSUMER_ORDER_INFO_CONFIG_NAME,
    ConsumerOrderInfoManager,
)
from orbitmq.broker.notification_processor import NotificationProcessor
from orbitmq.broker.peek_message_processor import PeekMessageProcessor
from orbitmq.broker.polling_info_processor import PollingInfoProcessor
from orbitmq.broker.pop_batch_reader import PopBatchReader
from orbitmq.broker.pop_long_polling_service import PopLongPollingService
from orbitmq.broker.pop_message_processor import PopMessageProcessor
from orbitmq.broker.pop_revive_service import PopReviveService
from orbitmq.common import ConfigFile
from orbitmq.common.clock import Clock
from orbitmq.common.file_system import FileSystem
from orbitmq.common.key_builder import build_cluster_revive_topic
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.remoting import DEFAULT_CAPACITY, RequestExecutor, RequestProcessor

if TYPE_CHECKING:
    from orbitmq.broker.broker_controller import BrokerController

log = logging.getLogger(__name__)

#: ``config/<name>.json``: each revive queue's end when consumerOffset.json was last saved.
POP_RECOVERY_OFFSETS_CONFIG_NAME: Final = "popRecoveryOffsets"


class PopComponents:
    """Owns the POP processors and services of one broker and their start and stop.
    Use from the broker's event loop."""

    def __init__(self, broker: BrokerController, clock: Clock, fs: FileSystem) -> None:
        config, store = broker.broker_config, broker.message_store
        self.broker_config, self.store = config, store
        self.topic_config_manager = broker.topic_config_manager
        self.consumer_offset_manager = broker.consumer_offset_manager
        self.revive_topic = build_cluster_revive_topic(config.broker_cluster_name)
        self.order_info_manager = ConsumerOrderInfoManager(
            broker.store_config.config_file(CONSUMER_ORDER_INFO_CONFIG_NAME), clock, fs
        )
        self.revive_service = PopReviveService(
            config,
            store,
            broker.topic_config_manager,
            broker.subscription_group_manager,
            broker.consumer_offset_manager,
            self.revive_topic,
            clock,
        )
        self.long_polling = PopLongPollingService(
            lambda: config.pop_polling_size, lambda: config.max_pop_polling_size
        )
        self.reader = PopBatchReader(
            config,
            store,
            broker.consumer_offset_manager,
            self.order_info_manager,
            self.revive_service,
        )
        groups, topics = broker.subscription_group_manager, broker.topic_config_manager
        self.pop_message_processor = PopMessageProcessor(
            config,
            store,
            topics,
            groups,
            broker.consumer_manager,
            self.reader,
            self.long_polling,
            self.revive_topic,
            clock,
        )
        self.ack_message_processor = AckMessageProcessor(
            config,
            store,
            topics,
            broker.consumer_offset_manager,
            self.order_info_manager,
            self.revive_service,
            self.long_polling,
            clock,
        )
        self.change_invisible_time_processor = ChangeInvisibleTimeProcessor(
            self.ack_message_processor
        )
        self.peek_message_processor = PeekMessageProcessor(
            config, store, topics, groups, self.reader, clock
        )
        self.notification_processor = NotificationProcessor(
            config,
            store,
            topics,
            groups,
            broker.consumer_offset_manager,
            self.order_info_manager,
            self.long_polling,
        )
        self.polling_info_processor = PollingInfoProcessor(
            config, topics, groups, self.long_polling
        )
        self._recovery_file = ConfigFile(
            broker.store_config.config_file(POP_RECOVERY_OFFSETS_CONFIG_NAME), fs
        )
        self.consumer_offset_manager.before_snapshot = self._revive_log_ends
        self.consumer_offset_manager.after_save = self._save_recovery_offsets
        self._persist_task: asyncio.Task[None] | None = None

    def served(
        self, pull: RequestExecutor
    ) -> list[tuple[RequestProcessor, frozenset[int], RequestExecutor]]:
        """The POP codes for the broker's routing table: reads on the pull executor, acks
        on their own (RocketMQ's ackMessageExecutor)."""
        ack = RequestExecutor("AckMessageExecutor", DEFAULT_CAPACITY)
        return [
            (self.pop_message_processor, PopMessageProcessor.REQUEST_CODES, pull),
            (self.ack_message_processor, AckMessageProcessor.REQUEST_CODES, ack),
            (
                self.change_invisible_time_processor,
                ChangeInvisibleTimeProcessor.REQUEST_CODES,
                ack,
            ),
            (self.peek_message_processor, PeekMessageProcessor.REQUEST_CODES, pull),
            (self.notification_processor, NotificationProcessor.REQUEST_CODES, pull),
            (self.polling_info_processor, PollingInfoProcessor.REQUEST_CODES, pull),
        ]

    # -- restart ---------------------------------------------------------------------------

    def _revive_log_ends(self) -> object:
        """Before consumerOffset.json's copy: every pop whose check point sits below these
        revive-log offsets committed its offset before, so the copy holds it."""
        return {
            qid: self.store.get_max_offset_in_queue(self.revive_topic, qid)
            for qid in range(self.broker_config.revive_queue_num)
        }

    def _save_recovery_offsets(self, ends: object) -> None:
        if isinstance(ends, dict):
            self._recovery_file.save({"reviveTopic": self.revive_topic, "offsetTable": ends})

    def _load_recovery_offsets(self) -> dict[int, int] | None:
        raw: Any = self._recovery_file.load_with(orjson.loads)
        if not isinstance(raw, dict) or raw.get("reviveTopic") != self.revive_topic:
            return None
        return {int(qid): int(offset) for qid, offset in raw.get("offsetTable", {}).items()}

    async def load(self) -> None:
        """After the store's recovery, before serving: the revive topic, the FIFO order
        info, and the revive log's replay (check points in flight, and the POP offsets a
        crash left behind in consumerOffset.json)."""
        created = await asyncio.to_thread(
            self.topic_config_manager.create_topic_in_send_message_back_method,
            self.revive_topic,
            self.broker_config.revive_queue_num,
            PERM_READ | PERM_WRITE,
            0,
        )
        self.topic_config_manager.system_topics.add(created.topic_name)
        self.order_info_manager.load()
        recovery = self._load_recovery_offsets()
        report = await asyncio.to_thread(self.revive_service.replay, recovery)
        restored = 0
        for (group, topic, queue_id), offset in report.popped_offsets.items():
            if offset > self.consumer_offset_manager.query_offset(group, topic, queue_id):
                self.consumer_offset_manager.commit_offset(
                    "PopRecovery", group, topic, queue_id, offset
                )
                restored += 1
        log.info(
            "pop: %d check points in flight, %d acks replayed, %d offsets restored from %s",
            report.check_points,
            report.acks,
            restored,
            self.revive_topic,
        )

    async def start(self) -> None:
        self.long_polling.start()
        await self.revive_service.start()
        if self._persist_task is None:
            self._persist_task = asyncio.create_task(
                run_every(
                    self.broker_config.flush_consumer_offset_interval / 1000,
                    lambda: asyncio.to_thread(self.order_info_manager.persist),
                    "persist consumer order info",
                ),
                name="persistConsumerOrderInfo",
            )

    async def stop(self) -> None:
        task, self._persist_task = self._persist_task, None
        await cancel_and_wait(task)
        self.long_polling.stop()
        await self.revive_service.stop()
        await asyncio.to_thread(self.order_info_manager.persist)

    def message_arriving(self, topic: str, queue_id: int) -> None:
        """The store's arrival listener (any thread): wake held POPs and NOTIFICATIONs."""
        self.long_polling.message_arriving(topic, queue_id)

"""``ColdDataFlowControl``: one broker's RocketMQ 5 cold data flow control, its parts wired
together (docs/operations.md, "Cold data flow control")."""

from __future__ import annotations

import asyncio
from typing import Final

from orbitmq.broker.admin_cold_data_processor import AdminColdDataProcessor
from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.cold_data_cg_ctr_service import ColdDataCgCtrService
from orbitmq.broker.cold_data_pull_request_hold_service import ColdDataPullRequestHoldService
from orbitmq.broker.pull_request_hold_service import PullRequest, Wakeup
from orbitmq.common.clock import SYSTEM_CLOCK
from orbitmq.filter import SubscriptionData
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.remoting import ChannelContext, RequestExecutor, RequestProcessor
from orbitmq.store import ColdDataCheckService, MessageFilter, MessageStore

#: RocketMQ's remark for a push consumer's pull refused by the cold data flow control.
COLD_DATA_FLOW_CONTROL_REMARK: Final = (
    "This consumer group is reading cold data. It has been flow control"
)
#: How long a held cold pull's PullRequest says it waits (RocketMQ: 1000 ms; the hold
#: service releases it after 3 s whatever this says).
COLD_HOLD_POLLING_MS: Final = 1000


class ColdDataFlowControl:
    """Owns the store's cold check (``ColdDataCheckService``, attached to the commit log so
    that reads count their cold bytes), each group's cold reads
    (``ColdDataCgCtrService``), the held cold pulls (``ColdDataPullRequestHoldService``,
    run again through ``wakeup``) and the admin requests on them
    (``AdminColdDataProcessor``). Event-loop confined but for the check's scan thread."""

    def __init__(self, broker_config: BrokerConfig, store: MessageStore, wakeup: Wakeup) -> None:
        self.store = store
        self.cold_data_check_service = ColdDataCheckService(
            store.config, store.commit_log, SYSTEM_CLOCK
        )
        self.cold_data_check_service.attach()
        self.cold_data_cg_ctr_service = ColdDataCgCtrService(broker_config, store.config)
        self.cold_data_pull_request_hold_service = ColdDataPullRequestHoldService(
            store.config, wakeup
        )
        self.admin_processor = AdminColdDataProcessor(self.cold_data_cg_ctr_service, store)

    async def start(self) -> None:
        self.cold_data_check_service.start()
        await self.cold_data_cg_ctr_service.start()
        await self.cold_data_pull_request_hold_service.start()

    async def stop(self) -> None:
        await self.cold_data_pull_request_hold_service.stop()
        await self.cold_data_cg_ctr_service.stop()
        await asyncio.to_thread(self.cold_data_check_service.shutdown)

    def served(
        self, executor: RequestExecutor
    ) -> list[tuple[RequestProcessor, frozenset[int], RequestExecutor]]:
        """The admin codes' routing entries (2001-2004), on ``executor``."""
        return [(self.admin_processor, AdminColdDataProcessor.REQUEST_CODES, executor)]

    def is_controlled(self, group: str, topic: str, queue_id: int, offset: int) -> bool:
        """RocketMQ's check before a pull reads: ``group`` is over its cold read threshold
        and the pull starts in the commit log's cold area (isMsgInColdArea: not exact, one
        unit looked at)."""
        if not self.cold_data_cg_ctr_service.is_cg_need_cold_data_flow_ctr(group):
            return False
        unit = self.store.get_message_unit_in_queue(topic, queue_id, offset)
        return unit is not None and self.cold_data_check_service.check_in_cold_area(
            unit[0], self.store.commit_log.max_offset
        )

    def refuse_or_hold(
        self,
        ctx: ChannelContext,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        response: RemotingCommand,
        reading: tuple[SubscriptionData, MessageFilter],
        push: bool,
    ) -> RemotingCommand | None:
        """A controlled group's cold pull (``reading``: its subscription and filter): a
        push consumer's is answered SYSTEM_BUSY (its client backs off); any other is held
        (None: answered when the hold service runs it again)."""
        if push:
            response.set_code_and_remark(ResponseCode.SYSTEM_BUSY, COLD_DATA_FLOW_CONTROL_REMARK)
            return response
        held = PullRequest(
            ctx,
            request,
            COLD_HOLD_POLLING_MS,
            asyncio.get_running_loop().time(),
            header.queue_offset,
            *reading,
        )
        self.cold_data_pull_request_hold_service.suspend_cold_data_read_request(held)
        return None

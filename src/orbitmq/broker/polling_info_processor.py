"""``PollingInfoProcessor``: POLLING_INFO (200055) — how many POP requests of a group are
held on a queue (RocketMQ 5's ``PollingInfoProcessor``)."""

from __future__ import annotations

from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.pop_long_polling_service import PopLongPollingService
from orbitmq.broker.pop_message_processor import check_topic_and_group
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.header import PollingInfoRequestHeader, PollingInfoResponseHeader
from orbitmq.protocol.perm_name import is_readable
from orbitmq.protocol.processor_codes import POLLING_INFO_CODES
from orbitmq.remoting import ChannelContext


class PollingInfoProcessor:
    """Answers POLLING_INFO. Use from the broker's event loop only."""

    REQUEST_CODES: Final = POLLING_INFO_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        long_polling: PopLongPollingService,
    ) -> None:
        self.broker_config = broker_config
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.long_polling = long_polling

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = PollingInfoRequestHeader.from_ext_fields(request.ext_fields)
        response = RemotingCommand.create_response(request, ResponseCode.SUCCESS)
        if not is_readable(self.broker_config.broker_permission):
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.broker_config.broker_ip1}] peeking message is forbidden",
            )
            return response
        checked = await check_topic_and_group(
            self.topic_config_manager,
            self.subscription_group_manager,
            header.topic,
            header.queue_id,
            header.consumer_group,
            ctx.remote_address,
            response,
        )
        if checked is None:
            return response
        count = self.long_polling.polling_num(
            (header.topic, header.consumer_group, header.queue_id)
        )
        response.ext_fields.update(PollingInfoResponseHeader(polling_num=count).to_ext_fields())
        return response

"""``GrpcClientServices``: what the gRPC endpoint knows of its 5.x clients, over one broker:
their channels (``GrpcChannelManager``), their settings (``GrpcClientSettingsManager``), the
Telemetry and EndTransaction RPCs, and the ACL check in front of every RPC when the broker
runs with aclEnable=true (``GrpcAccessValidator`` over the broker's own plain ACL)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orbitmq.broker import BrokerController
from orbitmq.common import decode_message_id
from orbitmq.proxy.end_transaction_activity import EndTransactionActivity
from orbitmq.proxy.grpc_access_validator import GrpcAccessValidator
from orbitmq.proxy.grpc_acl_pipeline import with_checks
from orbitmq.proxy.grpc_client_channel import GrpcChannelManager
from orbitmq.proxy.grpc_client_settings import GrpcClientSettingsManager
from orbitmq.proxy.messaging_service import Behaviour, Context
from orbitmq.proxy.telemetry_activity import TelemetryActivity
from orbitmq.proxy.transaction_id import encode_transaction_id


def half_transaction_id(message_id: str, offset_msg_id: str, queue_offset: int) -> str:
    """The transaction id a transactional SendMessage answers: where its half is stored
    (``transaction_id``), from the offset message id and the half queue offset."""
    _host, commit_log_offset = decode_message_id(offset_msg_id)
    return encode_transaction_id(commit_log_offset, queue_offset)


class GrpcClientServices:
    """Owns the client tables and the activities over them for one broker. Use from the
    broker's event loop only."""

    def __init__(self, broker: BrokerController, message_builder: Callable[[Any], Any]) -> None:
        self.broker = broker
        self.channels = GrpcChannelManager(message_builder, broker.broker_config.broker_name)
        self.settings = GrpcClientSettingsManager(
            lambda: broker.store_config.max_message_size,
            broker.subscription_group_manager.find_subscription_group_config,
            validate_message_type=lambda: broker.broker_config.enable_topic_message_type_check,
        )
        self.telemetry = TelemetryActivity(
            self.channels,
            self.settings,
            broker.producer_manager,
            broker.consumer_manager,
            self.validator,
        )
        self.end_transaction = EndTransactionActivity(broker.transactional_message_service)
        self._validator: GrpcAccessValidator | None = None

    def validator(self) -> GrpcAccessValidator | None:
        """The ACL check, None when the broker runs without ACL."""
        manager = self.broker.acl.manager
        if manager is None:
            return None
        if self._validator is None or self._validator.manager is not manager:
            self._validator = GrpcAccessValidator(manager)
        return self._validator

    async def end_transaction_behaviour(self, request: Any, context: Context) -> Any:
        """The EndTransaction RPC."""
        return await self.end_transaction.end_transaction(request)

    def checked(self, behaviours: Mapping[str, Behaviour]) -> dict[str, Behaviour]:
        """``behaviours`` behind the malformed-request and ACL checks (the ACL check passes
        everything with ACL off)."""
        return with_checks(behaviours, self.validator)

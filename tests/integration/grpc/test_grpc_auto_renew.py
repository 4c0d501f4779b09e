"""Auto-renewed receives (a PushConsumer's ``auto_renew``): the endpoint keeps the message
invisible by renewing its handle, the client acks with the handle it received (the endpoint
acks the renewed one), and a client that terminates gets its messages back to the group."""

from __future__ import annotations

from typing import Any

from orbitmq.proxy.receipt_handle import decode_receipt_handle
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from tests.integration.grpc.conftest import CLIENT_METADATA, GrpcCluster, create_topic
from tests.integration.grpc.test_grpc_receive import GROUP, ack, produce, receive


async def test_a_renewed_message_is_acked_with_the_handle_received(
    grpc_cluster: GrpcCluster,
) -> None:
    await create_topic(grpc_cluster.broker, "RenewTopic")
    await produce(grpc_cluster, "RenewTopic", 1)
    _, [message], _ = await receive(grpc_cluster, "RenewTopic", auto_renew=True)
    renewals = grpc_cluster.endpoint.application.consumer.renewals
    assert len(renewals) == 1
    received = decode_receipt_handle(message.system_properties.receipt_handle)
    # The default invisible time (60 s) ends within a wide renewal window: renew now.
    renewals.ahead_ms = 120_000
    await renewals.renew_due()
    client_id = dict(CLIENT_METADATA)["x-mq-client-id"]
    message_id = message.system_properties.message_id
    renewed = renewals.current(client_id, GROUP, message_id)
    assert renewed is not None
    assert renewed.extra.revive_time > received.extra.revive_time
    # Invisible still, to the group's other receives.
    status, messages, _ = await receive(grpc_cluster, "RenewTopic", polling_s=5)
    assert (status.code, messages) == (d.MESSAGE_NOT_FOUND, [])
    acked = await ack(grpc_cluster, "RenewTopic", message)
    assert acked.status.code == d.OK, acked
    assert len(renewals) == 0


async def test_a_terminated_clients_messages_come_back(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "ClearTopic")
    await produce(grpc_cluster, "ClearTopic", 1)
    _, [message], _ = await receive(grpc_cluster, "ClearTopic", auto_renew=True)
    # What the client's Telemetry settings leave in the endpoint's table.
    table: Any = grpc_cluster.endpoint.application.client.settings
    client_id = dict(CLIENT_METADATA)["x-mq-client-id"]
    table.update_client_settings(
        client_id,
        d.Settings(
            client_type=d.PUSH_CONSUMER, subscription=d.Subscription(group=d.Resource(name=GROUP))
        ),
    )
    terminated = await grpc_cluster.stub.NotifyClientTermination(
        pb.NotifyClientTerminationRequest(group=d.Resource(name=GROUP)), metadata=CLIENT_METADATA
    )
    assert terminated.status.code == d.OK
    assert len(grpc_cluster.endpoint.application.consumer.renewals) == 0
    # Back after a second (not after the 60 s it was received for), as a second attempt.
    again: list[d.Message] = []
    while not again:
        _, again, _ = await receive(grpc_cluster, "ClearTopic", polling_s=5)
    [back] = again
    assert back.system_properties.message_id == message.system_properties.message_id
    assert back.system_properties.delivery_attempt == 2


async def test_a_client_whose_telemetry_ends_gets_its_messages_back(
    grpc_cluster: GrpcCluster,
) -> None:
    """A client that disappears without NotifyClientTermination (its process killed, its
    stream cut) is gone once its Telemetry stream ends: its renewed messages come back."""
    await create_topic(grpc_cluster.broker, "GoneTopic")
    await produce(grpc_cluster, "GoneTopic", 1)
    client_id = dict(CLIENT_METADATA)["x-mq-client-id"]
    call: Any = grpc_cluster.stub.Telemetry(metadata=CLIENT_METADATA)  # type: ignore[call-arg]
    settings = d.Settings(
        client_type=d.PUSH_CONSUMER, subscription=d.Subscription(group=d.Resource(name=GROUP))
    )
    await call.write(pb.TelemetryCommand(settings=settings))
    assert (await call.read()).status.code == d.OK
    _, [message], _ = await receive(grpc_cluster, "GoneTopic", auto_renew=True)
    renewals = grpc_cluster.endpoint.application.consumer.renewals
    assert renewals.current(client_id, GROUP, message.system_properties.message_id) is not None
    call.cancel()
    again: list[d.Message] = []
    while not again:
        _, again, _ = await receive(grpc_cluster, "GoneTopic", polling_s=5)
    [back] = again
    assert back.system_properties.message_id == message.system_properties.message_id
    assert back.system_properties.delivery_attempt == 2
    assert len(renewals) == 0

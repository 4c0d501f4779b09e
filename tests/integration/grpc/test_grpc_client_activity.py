"""Heartbeat and NotifyClientTermination over a real gRPC channel: a 5.x client that
declared its settings is registered with the broker's producer or consumer manager (so the
broker's admin answers list it, as a remoting client), and unregistered when it terminates;
one that declared nothing is answered UNRECOGNIZED_CLIENT_TYPE, as by RocketMQ's proxy."""

from __future__ import annotations

from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from tests.integration.grpc.conftest import CLIENT_METADATA, GrpcCluster

CLIENT_ID = dict(CLIENT_METADATA)["x-mq-client-id"]


def declare(g: GrpcCluster, settings: d.Settings) -> None:
    """What the client's Telemetry settings leave in the endpoint's table."""
    g.endpoint.application.clients.settings.update_client_settings(CLIENT_ID, settings)


async def test_heartbeat_without_settings_is_unrecognized(grpc_cluster: GrpcCluster) -> None:
    response = await grpc_cluster.stub.Heartbeat(
        pb.HeartbeatRequest(client_type=d.PRODUCER), metadata=CLIENT_METADATA
    )
    assert (response.status.code, response.status.message) == (
        d.UNRECOGNIZED_CLIENT_TYPE,
        "cannot find client settings for this client",
    )


async def test_producer_heartbeat_registers_under_each_topic(grpc_cluster: GrpcCluster) -> None:
    declare(
        grpc_cluster,
        d.Settings(
            client_type=d.PRODUCER,
            publishing=d.Publishing(topics=[d.Resource(name="T1"), d.Resource(name="T2")]),
        ),
    )
    response = await grpc_cluster.stub.Heartbeat(
        pb.HeartbeatRequest(client_type=d.PRODUCER), metadata=CLIENT_METADATA
    )
    assert response.status.code == d.OK
    producers = grpc_cluster.broker.producer_manager
    for topic in ("T1", "T2"):
        [info] = producers.get_group_channel_table(topic).values()
        assert info.client_id == CLIENT_ID
        assert info.channel.remote_address.startswith("127.0.0.1:")
    terminated = await grpc_cluster.stub.NotifyClientTermination(
        pb.NotifyClientTerminationRequest(), metadata=CLIENT_METADATA
    )
    assert terminated.status.code == d.OK
    assert not producers.get_group_channel_table("T1")
    assert not producers.get_group_channel_table("T2")


async def test_consumer_heartbeat_registers_the_group_and_its_subscriptions(
    grpc_cluster: GrpcCluster,
) -> None:
    declare(
        grpc_cluster,
        d.Settings(
            client_type=d.SIMPLE_CONSUMER,
            subscription=d.Subscription(
                group=d.Resource(name="g5"),
                subscriptions=[
                    d.SubscriptionEntry(
                        topic=d.Resource(name="T1"),
                        expression=d.FilterExpression(type=d.TAG, expression="a || b"),
                    )
                ],
            ),
        ),
    )
    group = d.Resource(name="g5")
    response = await grpc_cluster.stub.Heartbeat(
        pb.HeartbeatRequest(client_type=d.SIMPLE_CONSUMER, group=group), metadata=CLIENT_METADATA
    )
    assert response.status.code == d.OK
    consumers = grpc_cluster.broker.consumer_manager
    info = consumers.get_consumer_group_info("g5")
    assert info is not None
    assert info.all_client_ids() == [CLIENT_ID]
    subscription = consumers.find_subscription_data("g5", "T1")
    assert subscription is not None
    assert subscription.tags_set == frozenset({"a", "b"})
    terminated = await grpc_cluster.stub.NotifyClientTermination(
        pb.NotifyClientTerminationRequest(group=group), metadata=CLIENT_METADATA
    )
    assert terminated.status.code == d.OK
    assert consumers.get_consumer_group_info("g5") is None


async def test_consumer_heartbeat_with_a_bad_group_or_filter(grpc_cluster: GrpcCluster) -> None:
    settings = d.Settings(
        client_type=d.PUSH_CONSUMER,
        subscription=d.Subscription(
            subscriptions=[
                d.SubscriptionEntry(
                    topic=d.Resource(name="T1"),
                    expression=d.FilterExpression(type=d.SQL, expression="a >>>> ("),
                )
            ]
        ),
    )
    declare(grpc_cluster, settings)
    blank = await grpc_cluster.stub.Heartbeat(
        pb.HeartbeatRequest(client_type=d.PUSH_CONSUMER), metadata=CLIENT_METADATA
    )
    assert blank.status.code == d.ILLEGAL_CONSUMER_GROUP
    bad_filter = await grpc_cluster.stub.Heartbeat(
        pb.HeartbeatRequest(client_type=d.PUSH_CONSUMER, group=d.Resource(name="g6")),
        metadata=CLIENT_METADATA,
    )
    assert bad_filter.status.code == d.ILLEGAL_FILTER_EXPRESSION
    no_id = await grpc_cluster.stub.Heartbeat(
        pb.HeartbeatRequest(client_type=d.PUSH_CONSUMER, group=d.Resource(name="g6"))
    )
    assert no_id.status.code == d.UNRECOGNIZED_CLIENT_TYPE

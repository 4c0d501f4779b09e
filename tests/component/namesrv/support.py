"""Requests a broker and an admin tool send to a name server."""

from __future__ import annotations

from orbitmq.common import crc32
from orbitmq.protocol import (
    DataVersion,
    RegisterBrokerBody,
    RegisterBrokerRequestHeader,
    RemotingCommand,
    RequestCode,
    TopicConfig,
    TopicConfigSerializeWrapper,
)


def register_request(
    *topics: TopicConfig,
    broker_name: str = "broker-a",
    broker_addr: str = "127.0.0.1:10911",
    broker_id: int = 0,
    cluster: str = "DefaultCluster",
    counter: int = 1,
    compressed: bool = False,
) -> RemotingCommand:
    body = RegisterBrokerBody(
        TopicConfigSerializeWrapper(
            {t.topic_name: t for t in topics}, DataVersion(1_795_259_186_004, counter)
        )
    ).encode(compressed)
    header = RegisterBrokerRequestHeader(
        broker_name=broker_name,
        broker_addr=broker_addr,
        cluster_name=cluster,
        ha_server_addr=broker_addr.rsplit(":", 1)[0] + ":10912",
        broker_id=broker_id,
        compressed=compressed,
        body_crc32=crc32(body),
    )
    return RemotingCommand.create_request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)


def route_request(topic: str) -> RemotingCommand:
    return RemotingCommand.create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})

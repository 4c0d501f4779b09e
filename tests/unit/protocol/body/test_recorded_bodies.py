"""Every JSON body in the 4.9.8 recordings decodes into its typed body with the values the real
name server, broker and clients put there."""

from __future__ import annotations

import orjson
import pytest

from orbitmq.protocol.body import (
    ConsumeFromWhere,
    ConsumeType,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    MessageModel,
    RegisterBrokerBody,
    TopicFilterType,
    TopicRouteData,
)
from orbitmq.protocol.request_code import RequestCode
from tests.unit.protocol.body.recordings import BODIES, RECORDINGS, RecordedBody, recorded

ROUTES = recorded(RequestCode.GET_ROUTEINFO_BY_TOPIC, response=True)
HEARTBEATS = recorded(RequestCode.HEART_BEAT, response=False)
CONSUMER_LISTS = recorded(RequestCode.GET_CONSUMER_LIST_BY_GROUP, response=True)
REGISTRATIONS = recorded(RequestCode.REGISTER_BROKER, response=False)


def _id(body: RecordedBody) -> str:
    return f"{body.client}-{body.body_length}"


def test_the_recordings_hold_these_bodies() -> None:
    assert len(RECORDINGS) == 3
    assert {b.client for b in ROUTES} == {"java", "cpp-2.1", "cpp-1.x"}
    assert {b.client for b in HEARTBEATS} == {"java", "cpp-2.1", "cpp-1.x"}
    assert len(CONSUMER_LISTS) == 12
    assert len(REGISTRATIONS) == 5
    assert all(b.whole for b in ROUTES + HEARTBEATS + CONSUMER_LISTS)
    assert not any(b.whole for b in REGISTRATIONS), "the recordings cut REGISTER_BROKER bodies"
    json_codes = {b.code for b in BODIES if b.text.lstrip().startswith("{")}
    assert json_codes == {34, 38, 103, 105}


@pytest.mark.parametrize("body", ROUTES, ids=_id)
def test_route_data_from_the_real_name_server(body: RecordedBody) -> None:
    route = TopicRouteData.from_json(body.text.encode())
    (broker,) = route.broker_datas
    assert broker.broker_addrs == {0: "127.0.0.1:10911"}
    assert broker.master_addr == "127.0.0.1:10911"
    assert (broker.cluster, broker.broker_name) == ("DefaultCluster", "broker-a")
    (queues,) = route.queue_datas
    assert queues.broker_name == "broker-a"
    assert queues.perm in (6, 7)
    assert queues.read_queue_nums == queues.write_queue_nums in (1, 4, 8)
    assert route.filter_server_table == {}
    assert route.order_topic_conf is None


def test_the_name_server_writes_unquoted_broker_ids_to_cpp_clients_only() -> None:
    # 4.9.8 writes standard JSON only to clients of version >= 4.9.4 (the Java client).
    for body in ROUTES:
        unquoted = '"brokerAddrs":{0:' in body.text
        assert unquoted == (body.client != "java"), body.recording


@pytest.mark.parametrize("body", ROUTES, ids=_id)
def test_route_data_is_written_as_the_name_server_writes_standard_json(body: RecordedBody) -> None:
    standard = body.text.replace('"brokerAddrs":{0:', '"brokerAddrs":{"0":')
    assert TopicRouteData.from_json(body.text).to_json() == standard.encode()


def test_java_heartbeat() -> None:
    for body in (b for b in HEARTBEATS if b.client == "java"):
        heartbeat = HeartbeatData.from_json(body.text.encode())
        assert heartbeat.client_id == "127.0.0.1@9400#1164173566194"
        assert [p.group_name for p in heartbeat.producer_data_set] == ["CLIENT_INNER_PRODUCER"]
        (consumer,) = heartbeat.consumer_data_set
        assert consumer.group_name == "CID_PROBE"
        assert consumer.consume_type is ConsumeType.CONSUME_PASSIVELY
        assert consumer.message_model is MessageModel.CLUSTERING
        assert consumer.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        assert consumer.unit_mode is False
        topics = [s.topic for s in consumer.subscription_data_set]
        assert topics == ["TopicJava", "%RETRY%CID_PROBE"]
        for subscription in consumer.subscription_data_set:
            assert subscription.sub_string == "*"
            assert subscription.expression_type == "TAG"
            assert subscription.tags_set == set() and subscription.code_set == set()
            assert subscription.sub_version > 1_700_000_000_000
        # fastjson sorts members by name, as we do: the Java client's bytes come back.
        assert heartbeat.to_json() == body.text.encode()


@pytest.mark.parametrize(
    ("client", "client_id", "topic"),
    [
        ("cpp-1.x", "9909-127.0.0.1@DEFAULT", "TopicCpp1"),
        ("cpp-2.1", "127.0.0.1@9985#DEFAULT", "TopicCpp2"),
    ],
)
def test_cpp_consumer_heartbeat_sends_enum_ordinals_and_string_versions(
    client: str, client_id: str, topic: str
) -> None:
    bodies = [b for b in HEARTBEATS if b.client == client and "consumerDataSet" in b.text]
    assert len(bodies) == 2
    for body in bodies:
        assert '"consumeType":1' in body.text and '"subVersion":"' in body.text
        heartbeat = HeartbeatData.from_json(body.text.encode())
        assert heartbeat.client_id == client_id
        assert heartbeat.producer_data_set == []
        (consumer,) = heartbeat.consumer_data_set
        assert consumer.group_name == "CID_PROBE"
        assert consumer.consume_type is ConsumeType.CONSUME_PASSIVELY
        assert consumer.message_model is MessageModel.CLUSTERING
        assert consumer.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        assert [s.topic for s in consumer.subscription_data_set] == ["%RETRY%CID_PROBE", topic]
        sent = orjson.loads(body.text)["consumerDataSet"][0]["subscriptionDataSet"]
        for subscription, raw in zip(consumer.subscription_data_set, sent, strict=True):
            assert subscription.sub_string == "*"
            assert subscription.sub_version == int(raw["subVersion"])
            assert subscription.expression_type == "TAG"
            assert subscription.class_filter_mode is False
        assert HeartbeatData.from_json(heartbeat.to_json()) == heartbeat


def test_cpp_producer_heartbeat() -> None:
    (body,) = [b for b in HEARTBEATS if "producerDataSet" in b.text and b.client == "cpp-2.1"]
    assert body.text.endswith("}\n")
    heartbeat = HeartbeatData.from_json(body.text.encode())
    assert heartbeat.client_id == "127.0.0.1@9986#DEFAULT"
    assert [p.group_name for p in heartbeat.producer_data_set] == ["PID_PROBE"]
    assert heartbeat.consumer_data_set == []


@pytest.mark.parametrize("body", CONSUMER_LISTS, ids=_id)
def test_consumer_list_from_the_real_broker(body: RecordedBody) -> None:
    listed = GetConsumerListByGroupResponseBody.from_json(body.text.encode())
    (client_id,) = listed.consumer_id_list
    assert client_id in {
        "127.0.0.1@9400#1164173566194",
        "9909-127.0.0.1@DEFAULT",
        "127.0.0.1@9985#DEFAULT",
    }
    assert listed.to_json() == body.text.encode()


def _complete_topics_only(prefix: str) -> str:
    """The recorded start of a REGISTER_BROKER body, cut after its last whole topic config
    and closed: the recording keeps only 600 characters of each such body."""
    cut = prefix.rindex('},"')
    return prefix[: cut + 1] + "}}}"


@pytest.mark.parametrize("body", REGISTRATIONS, ids=_id)
def test_register_broker_body_from_the_real_broker(body: RecordedBody) -> None:
    assert body.ext_fields["compressed"] == "false"
    registration = RegisterBrokerBody.decode(
        _complete_topics_only(body.text).encode(), compressed=False
    )
    assert registration.filter_server_list == []
    wrapper = registration.topic_config_serialize_wrapper
    assert wrapper.data_version.counter in (2, 3, 4, 5)
    assert wrapper.data_version.timestamp > 1_700_000_000_000
    schedule = wrapper.topic_config_table["SCHEDULE_TOPIC_XXXX"]
    assert schedule.topic_name == "SCHEDULE_TOPIC_XXXX"
    assert (schedule.read_queue_nums, schedule.write_queue_nums, schedule.perm) == (18, 18, 6)
    assert schedule.topic_filter_type is TopicFilterType.SINGLE_TAG
    assert (schedule.topic_sys_flag, schedule.order) == (0, False)
    assert wrapper.topic_config_table["SELF_TEST_TOPIC"].read_queue_nums == 1
    again = RegisterBrokerBody.decode(registration.encode(compressed=True), compressed=True)
    assert again.topic_config_serialize_wrapper.topic_config_table.keys() == (
        wrapper.topic_config_table.keys()
    )

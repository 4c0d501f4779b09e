"""The bodies of the group admin requests as a Java client and broker (fastjson) write them:
ConsumerRunningInfo (307), ConsumeMessageDirectlyResult (309), ConsumerConnection (203),
GroupList (300) and SubscriptionGroupConfig (200); and written back under the same names."""

from __future__ import annotations

import orjson

from orbitmq.common import MessageQueue
from orbitmq.protocol import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeType,
    GroupList,
    ProcessQueueInfo,
    SubscriptionGroupConfig,
)
from orbitmq.protocol.language_code import LanguageCode

#: A Java 4.9.8 push consumer's answer to GET_CONSUMER_RUNNING_INFO, as fastjson writes it:
#: MessageQueue keys as unquoted objects, getter-derived names (pullRT, droped, ...).
JAVA_RUNNING_INFO = (
    b'{"mqPopTable":{},"mqTable":{{"brokerName":"broker-a","queueId":1,"topic":"TopicTest"}:'
    b'{"cachedMsgCount":2,"cachedMsgMaxOffset":41,"cachedMsgMinOffset":40,'
    b'"cachedMsgSizeInMiB":0,"commitOffset":40,"droped":false,"lastConsumeTimestamp":1700000000001,'
    b'"lastLockTimestamp":1700000000000,"lastPullTimestamp":1700000000002,"locked":false,'
    b'"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0,'
    b'"tryUnlockTimes":0}},"properties":{"consumerGroup":"cg","PROP_CONSUMEORDERLY":"false",'
    b'"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","PROP_NAMESERVER_ADDR":"127.0.0.1:9876;",'
    b'"PROP_CLIENT_VERSION":"V4_9_8","PROP_CONSUMER_START_TIMESTAMP":"1700000000000"},'
    b'"statusTable":{"TopicTest":{"consumeFailedMsgs":0,"consumeFailedTPS":0.0,'
    b'"consumeOKTPS":1.5,"consumeRT":2.0,"pullRT":3.0,"pullTPS":4.0}},'
    b'"subscriptionSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG",'
    b'"subString":"*","subVersion":1700000000000,"tagsSet":[],"topic":"TopicTest"}]}'
)


def test_running_info_as_a_java_client_answers_it() -> None:
    info = ConsumerRunningInfo.from_json(JAVA_RUNNING_INFO)

    mq = MessageQueue("TopicTest", "broker-a", 1)
    assert info.mq_table[mq] == ProcessQueueInfo(
        commit_offset=40,
        cached_msg_min_offset=40,
        cached_msg_max_offset=41,
        cached_msg_count=2,
        last_lock_timestamp=1_700_000_000_000,
        last_consume_timestamp=1_700_000_000_001,
        last_pull_timestamp=1_700_000_000_002,
    )
    status = info.status_table["TopicTest"]
    assert (status.consume_ok_tps, status.consume_rt, status.pull_rt, status.pull_tps) == (
        1.5,
        2.0,
        3.0,
        4.0,
    )
    assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert [s.topic for s in info.subscription_set] == ["TopicTest"]
    assert ConsumerRunningInfo.from_json(info.to_json()) == info


def test_running_info_is_written_under_rocketmqs_names() -> None:
    info = ConsumerRunningInfo(
        mq_table={MessageQueue("T", "b", 0): ProcessQueueInfo(droped=True, locked=True)}
    )
    written = orjson.loads(info.to_json())
    [queue] = written["mqTable"].values()
    assert {"droped", "locked", "cachedMsgSizeInMiB", "tryUnlockTimes"} <= set(queue)
    assert "jstack" not in written  # null members are left out, as fastjson does


def test_consume_message_directly_result() -> None:
    java = (
        b'{"autoCommit":true,"consumeResult":"CR_THROW_EXCEPTION","order":false,'
        b'"remark":"java.lang.RuntimeException: x","spentTimeMills":3}'
    )
    result = ConsumeMessageDirectlyResult.from_json(java)
    assert result.consume_result is CMResult.CR_THROW_EXCEPTION
    assert result.spent_time_mills == 3
    assert orjson.loads(result.to_json()) == orjson.loads(java)


def test_consumer_connection_and_group_list_as_a_java_broker_writes_them() -> None:
    java = (
        b'{"connectionSet":[{"clientAddr":"127.0.0.1:50000","clientId":"127.0.0.1@1",'
        b'"language":"JAVA","version":409}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        b'"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",'
        b'"subscriptionTable":{"TopicTest":{"classFilterMode":false,"codeSet":[],'
        b'"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"TopicTest"}}}'
    )
    connection = ConsumerConnection.from_json(java)
    assert connection.connection_set[0].language is LanguageCode.JAVA
    assert connection.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert orjson.loads(connection.to_json()) == orjson.loads(java)
    assert GroupList.from_json(b'{"groupList":["b","a"]}').group_list == {"a", "b"}
    assert orjson.loads(GroupList({"b", "a"}).to_json()) == {"groupList": ["a", "b"]}


def test_subscription_group_config_defaults_are_rocketmqs() -> None:
    config = SubscriptionGroupConfig.from_json(b'{"groupName":"g"}')
    assert config == SubscriptionGroupConfig(
        group_name="g",
        consume_enable=True,
        consume_from_min_enable=True,
        consume_broadcast_enable=True,
        retry_queue_nums=1,
        retry_max_times=16,
        broker_id=0,
        which_broker_when_consume_slowly=1,
        notify_consumer_ids_changed_enable=True,
    )

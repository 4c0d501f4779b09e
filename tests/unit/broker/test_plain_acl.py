"""RocketMQ 4.9.8's plain ACL rules, request by request: a real plain_acl.yml under a temporary
rocketmqHome, requests built and signed as clients send them, checked by the broker's RPC
hook, and each refusal's remark exactly as RocketMQ 4.9.8 answers it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from orbitmq.broker.plain_access_resource import Permission, check_permission
from orbitmq.broker.plain_access_validator import PlainAccessValidator
from orbitmq.broker.plain_permission_manager import PlainPermissionManager
from orbitmq.broker.remote_address_strategy import remote_address_strategy
from orbitmq.common.errors import ConfigError
from orbitmq.protocol import RemotingCommand, RequestCode, acl_signer
from orbitmq.remoting import RequestRefusedError

PLAIN_ACL_YML = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678  # unquoted, as in RocketMQ's example: YAML reads a number
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
      - topicP=PUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB
  - accessKey: rocketmq2
    secretKey: "12345678"
    whiteRemoteAddress: 192.168.1.*
    admin: true
"""
PEER = "127.0.0.1:50000"
EXC = "org.apache.rocketmq.acl.common.AclException"
AT = "org.apache.rocketmq.acl.plain.PlainPermissionManager"


@pytest.fixture
def validator(tmp_path: Path) -> PlainAccessValidator:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    manager = PlainPermissionManager(tmp_path)
    manager.load()
    return PlainAccessValidator(manager)


def request(
    code: int, fields: dict[str, str], body: bytes = b"", key: str | None = "RocketMQ"
) -> RemotingCommand:
    command = RemotingCommand.create_request(code, dict(fields), body)
    if key is not None:
        acl_signer.sign_request(command, key, "12345678")
    return command


def send(topic: str, group: str = "PID_A", key: str | None = "RocketMQ") -> RemotingCommand:
    return request(RequestCode.SEND_MESSAGE_V2, {"a": group, "b": topic, "c": "TBW102"}, b"m", key)


def pull(topic: str, group: str) -> RemotingCommand:
    return request(RequestCode.PULL_MESSAGE, {"consumerGroup": group, "topic": topic})


def refusal(validator: PlainAccessValidator, command: RemotingCommand, peer: str = PEER) -> str:
    with pytest.raises(RequestRefusedError) as refused:
        validator.do_before_request(peer, command)
    return refused.value.remark


def test_topic_rules_pub_sub_deny_and_the_default(validator: PlainAccessValidator) -> None:
    validator.do_before_request(PEER, send("topicB"))  # PUB|SUB
    validator.do_before_request(PEER, send("topicP"))  # PUB
    validator.do_before_request(PEER, pull("topicC", "groupB"))  # SUB
    validator.do_before_request(PEER, pull("topicB", "groupB"))
    assert refusal(validator, send("topicC")) == (
        f"{EXC}: No default permission for topic:topicC, "
        f"{AT}.checkPerm(PlainPermissionManager.java:611)"
    )
    assert "topic:topicA" in refusal(validator, send("topicA"))  # DENY
    assert "topic:topicP" in refusal(validator, pull("topicP", "groupB"))  # PUB only
    # Not listed: defaultTopicPerm DENY, raised where the default is checked.
    assert refusal(validator, send("topicZ")) == (
        f"{EXC}: No default permission for topic:topicZ, "
        f"{AT}.checkPerm(PlainPermissionManager.java:606)"
    )


def test_group_rules_and_the_group_default(validator: PlainAccessValidator) -> None:
    assert "group:groupA" in refusal(validator, pull("topicC", "groupA"))  # DENY
    validator.do_before_request(PEER, pull("topicC", "groupC"))  # SUB
    validator.do_before_request(PEER, pull("topicC", "groupZ"))  # default SUB
    offsets = {"consumerGroup": "groupA", "topic": "topicC", "queueId": "0", "commitOffset": "5"}
    assert "group:groupA" in refusal(
        validator, request(RequestCode.UPDATE_CONSUMER_OFFSET, offsets)
    )
    back = request(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "groupA", "offset": "0"})
    assert "group:groupA" in refusal(validator, back)
    for code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        assert "group:groupA" in refusal(validator, request(code, {"consumerGroup": "groupA"}))
        validator.do_before_request(PEER, request(code, {"consumerGroup": "groupB"}))


def test_a_send_to_a_retry_topic_needs_sub_on_the_group(validator: PlainAccessValidator) -> None:
    validator.do_before_request(PEER, send("%RETRY%groupB", group="groupB"))
    assert "group:groupA" in refusal(validator, send("%RETRY%groupA", group="groupA"))


def test_a_heartbeat_needs_sub_on_its_groups_and_their_topics(
    validator: PlainAccessValidator,
) -> None:
    def heartbeat(group: str, topic: str) -> RemotingCommand:
        body = {
            "clientID": "c1",
            "producerDataSet": [],
            "consumerDataSet": [
                {
                    "groupName": group,
                    "consumeType": "CONSUME_PASSIVELY",
                    "messageModel": "CLUSTERING",
                    "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                    "subscriptionDataSet": [{"topic": topic, "subString": "*"}],
                    "unitMode": False,
                }
            ],
        }
        return request(RequestCode.HEART_BEAT, {}, orjson.dumps(body))

    validator.do_before_request(PEER, heartbeat("groupB", "topicC"))
    assert "group:groupA" in refusal(validator, heartbeat("groupA", "topicC"))
    assert "topic:topicA" in refusal(validator, heartbeat("groupB", "topicA"))


def test_admin_codes_need_an_admin_account(validator: PlainAccessValidator) -> None:
    create = {"topic": "topicB", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}
    for code in (17, 25, 200, 207, 215):
        assert refusal(validator, request(code, create)) == (
            f"{EXC}: Need admin permission for request code={code}, but accessKey=RocketMQ is "
            f"not, {AT}.checkPerm(PlainPermissionManager.java:581)"
        )
        # The admin account, from outside its white address: signed, and let in.
        validator.do_before_request(PEER, request(code, create, key="rocketmq2"))


def test_the_trace_topic_is_open_to_every_signed_account(validator: PlainAccessValidator) -> None:
    validator.do_before_request(PEER, send("RMQ_SYS_TRACE_TOPIC"))


def test_missing_unknown_and_wrong_keys(validator: PlainAccessValidator) -> None:
    assert refusal(validator, send("topicB", key=None)) == (
        f"{EXC}: No accessKey is configured, {AT}.validate(PlainPermissionManager.java:664)"
    )
    stranger = RemotingCommand.create_request(RequestCode.SEND_MESSAGE_V2, {"b": "topicB"})
    acl_signer.sign_request(stranger, "nobody99", "12345678")
    assert refusal(validator, stranger) == (
        f"{EXC}: No acl config for nobody99, {AT}.validate(PlainPermissionManager.java:668)"
    )
    wrong = RemotingCommand.create_request(RequestCode.SEND_MESSAGE_V2, {"b": "topicB"})
    acl_signer.sign_request(wrong, "RocketMQ", "not-the-secret")
    assert refusal(validator, wrong) == (
        f"{EXC}: Check signature failed for accessKey=RocketMQ, "
        f"{AT}.validate(PlainPermissionManager.java:684)"
    )


def test_a_replay_with_a_changed_body_or_field_is_refused(validator: PlainAccessValidator) -> None:
    signed = send("topicB")
    validator.do_before_request(PEER, signed)
    signed.body = b"forged"
    assert "Check signature failed for accessKey=RocketMQ" in refusal(validator, signed)
    moved = send("topicB")
    moved.ext_fields["b"] = "topicP"
    assert "Check signature failed" in refusal(validator, moved)


def test_white_addresses_admit_without_a_signature(validator: PlainAccessValidator) -> None:
    # Global: no account at all.
    validator.do_before_request("10.10.103.7:1234", send("topicA", key=None))
    # The account's own: any signature, any resource.
    unsigned = RemotingCommand.create_request(RequestCode.SEND_MESSAGE_V2, {"b": "topicA"})
    unsigned.ext_fields["AccessKey"] = "rocketmq2"
    validator.do_before_request("192.168.1.20:1234", unsigned)
    assert "Check signature failed" in refusal(validator, unsigned, "192.168.2.20:1234")


@pytest.mark.parametrize(
    "pattern, admitted, refused",
    [
        ("192.168.0.*", ["192.168.0.1", "192.168.0.255"], ["192.168.1.1", "10.0.0.1"]),
        ("192.168.1-10.*", ["192.168.1.9", "192.168.10.0"], ["192.168.11.1", "192.168.0.5"]),
        ("192.168.*.*", ["192.168.200.3"], ["192.169.0.1"]),
        ("10.*", ["10.1.2.3"], ["11.1.2.3"]),
        ("192.168.1.{1,2,3}", ["192.168.1.2"], ["192.168.1.4"]),
        ("192.168.1.1,10.0.0.1", ["10.0.0.1", "192.168.1.1"], ["192.168.1.2"]),
        ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
        ("::1", ["0:0:0:0:0:0:0:1"], ["::2"]),
        ("*", ["1.2.3.4", "::1"], []),
        ("*.*.*.*", ["1.2.3.4"], []),
        ("", [], ["127.0.0.1"]),
    ],
)
def test_address_patterns(pattern: str, admitted: list[str], refused: list[str]) -> None:
    strategy = remote_address_strategy(pattern)
    assert [host for host in admitted + refused if strategy.match(host)] == admitted


@pytest.mark.parametrize("pattern", ["192.168.1.300-400", "not-an-ip", "192.168.1.x"])
def test_bad_address_patterns_are_named(pattern: str) -> None:
    with pytest.raises(ConfigError, match="plain ACL"):
        remote_address_strategy(pattern)


@pytest.mark.parametrize(
    "needed, owned, allowed",
    [
        (Permission.PUB, Permission.PUB, True),
        (Permission.SUB, Permission.PUB, False),
        (Permission.PUB, Permission.PUB | Permission.SUB, True),
        (Permission.ANY, Permission.SUB, True),
        (Permission.ANY, Permission.DENY, False),
        (Permission.SUB, Permission.SUB | Permission.DENY, False),
    ],
)
def test_permission_bits(needed: Permission, owned: Permission, allowed: bool) -> None:
    assert check_permission(needed, owned) is allowed


def test_a_bad_file_is_named_at_load_and_keeps_the_old_rules_on_reload(tmp_path: Path) -> None:
    acl_file = tmp_path / "conf" / "plain_acl.yml"
    acl_file.parent.mkdir()
    acl_file.write_text("accounts:\n  - accessKey: short\n")
    with pytest.raises(ConfigError, match=f"plain ACL file {acl_file}: The accessKey=short"):
        PlainPermissionManager(tmp_path).load()
    acl_file.write_text(PLAIN_ACL_YML)
    manager = PlainPermissionManager(tmp_path)
    manager.load()
    acl_file.write_text("accounts: [unclosed\n")
    assert manager.check_files() is False  # reported, not loaded
    PlainAccessValidator(manager).do_before_request(PEER, send("topicB"))


def test_a_recall_needs_pub_on_its_topic(validator: PlainAccessValidator) -> None:
    """RECALL_MESSAGE (RocketMQ 5.3): PUB on ``topic``, as a send."""

    def recall(topic: str) -> RemotingCommand:
        fields = {"producerGroup": "PID_A", "topic": topic, "recallHandle": "h"}
        return request(RequestCode.RECALL_MESSAGE, fields)

    validator.do_before_request(PEER, recall("topicP"))  # PUB
    assert "topic:topicC" in refusal(validator, recall("topicC"))  # SUB only

"""A real broker with aclEnable=true over sockets: refusals as RocketMQ 4.9.8 answers them
(SYSTEM_ERROR, code 1) on both ports, nothing stored for a refused send, the ACL admin
requests editing plain_acl.yml in RocketMQ's format, and the 5 s watch picking up a changed
file."""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import struct
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from orbitmq.broker import BrokerController
from orbitmq.client import AclClientRPCHook, PlainAccessConfig, SessionCredentials
from orbitmq.client.admin_api import MQAdminAPI
from orbitmq.client.errors import MQBrokerError
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode, decode_command
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import BrokerFactory, send, send_header, send_request
from tests.eventually import eventually_async

PLAIN_ACL_YML = """\
accounts:
  - accessKey: RocketMQ
    secretKey: "12345678"
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms: [Locked=DENY]
  - accessKey: adminKey1
    secretKey: "87654321"
    admin: true
"""
NO_ACCESS_KEY = (
    "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, "
    "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)"
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    conf = tmp_path / "home" / "conf"
    conf.mkdir(parents=True)
    (conf / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    return tmp_path / "home"


@pytest.fixture
async def acl_broker(broker_factory: BrokerFactory, home: Path) -> BrokerController:
    return await broker_factory(acl_enable=True, rocketmq_home=str(home))


async def signed_client(access_key: str, secret_key: str) -> RemotingClient:
    hook = AclClientRPCHook(SessionCredentials(access_key, secret_key))
    return RemotingClient(connect_timeout_s=2.0, rpc_hook=hook)


@pytest.fixture
async def user() -> AsyncIterator[RemotingClient]:
    client = await signed_client("RocketMQ", "12345678")
    yield client
    await client.close()


@pytest.fixture
async def admin() -> AsyncIterator[MQAdminAPI]:
    client = await signed_client("adminKey1", "87654321")
    yield MQAdminAPI(client)
    await client.close()


def a_send(topic: str) -> RemotingCommand:
    return send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic), b"body")


async def test_an_unsigned_send_is_refused_and_stores_nothing(
    acl_broker: BrokerController, client: RemotingClient, user: RemotingClient
) -> None:
    response = await send(client, acl_broker, a_send("TopicAcl"))
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, NO_ACCESS_KEY)
    assert response.code == 1
    assert acl_broker.message_store.max_phy_offset == 0
    denied = await send(user, acl_broker, a_send("Locked"))
    assert denied.code == ResponseCode.SYSTEM_ERROR
    assert "No default permission for topic:Locked" in (denied.remark or "")
    assert acl_broker.message_store.max_phy_offset == 0
    allowed = await send(user, acl_broker, a_send("TopicAcl"))
    assert allowed.code == ResponseCode.SUCCESS, allowed.remark
    assert acl_broker.message_store.max_phy_offset > 0


async def test_the_vip_channel_is_checked_too(
    acl_broker: BrokerController, client: RemotingClient, user: RemotingClient
) -> None:
    vip = f"127.0.0.1:{acl_broker.fast_port}"
    refused = await client.invoke(vip, a_send("TopicVip"), 5.0)
    assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_ERROR, NO_ACCESS_KEY)
    allowed = await user.invoke(vip, a_send("TopicVip"), 5.0)
    assert allowed.code == ResponseCode.SUCCESS, allowed.remark


async def test_acl_admin_requests_edit_the_file_as_rocketmq_does(
    acl_broker: BrokerController, admin: MQAdminAPI, home: Path
) -> None:
    addr, path = acl_broker.address, home / "conf" / "plain_acl.yml"
    before = await admin.get_broker_cluster_acl_info(addr, 5.0)
    assert (before.broker_name, before.broker_addr) == ("broker-a", addr)
    config = PlainAccessConfig(
        "newUser01", "secret-01", "10.1.*", False, "SUB", "SUB", ("TopicX=PUB",), ("G1=DENY",)
    )
    await admin.create_plain_access_config(addr, config, 5.0)
    written = yaml.safe_load(path.read_text())
    assert written["accounts"][-1] == {
        "accessKey": "newUser01",
        "secretKey": "secret-01",
        "whiteRemoteAddress": "10.1.*",
        "admin": False,
        "defaultTopicPerm": "SUB",
        "defaultGroupPerm": "SUB",
        "topicPerms": ["TopicX=PUB"],
        "groupPerms": ["G1=DENY"],
    }
    assert written["dataVersion"][0]["counter"] == 1
    after = await admin.get_broker_cluster_acl_info(addr, 5.0)
    assert '"counter":1' in after.version and str(path) in (after.all_acl_file_version or "")

    await admin.update_global_white_addrs_config(addr, ["192.168.0.*", "10.10.103.*"], None, 5.0)
    assert yaml.safe_load(path.read_text())["globalWhiteRemoteAddresses"] == [
        "192.168.0.*",
        "10.10.103.*",
    ]
    listed = await admin.get_broker_cluster_acl_config(addr, 5.0)
    assert listed["globalWhiteAddrs"] == ["192.168.0.*", "10.10.103.*"]
    assert [c["accessKey"] for c in listed["plainAccessConfigs"]] == [
        "RocketMQ",
        "adminKey1",
        "newUser01",
    ]

    await admin.delete_access_config(addr, "newUser01", 5.0)
    assert "newUser01" not in path.read_text()
    with pytest.raises(MQBrokerError) as failed:
        await admin.delete_access_config(addr, "newUser01", 5.0)
    assert failed.value.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
    with pytest.raises(MQBrokerError) as short:
        await admin.create_plain_access_config(addr, PlainAccessConfig("short", "x"), 5.0)
    assert short.value.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED


async def test_acl_admin_needs_an_admin_account_for_admin_codes(
    acl_broker: BrokerController, user: RemotingClient
) -> None:
    create = {"topic": "T1", "defaultTopic": "TBW102", "readQueueNums": "1"}
    request = RemotingCommand.create_request(RequestCode.UPDATE_AND_CREATE_TOPIC, create)
    response = await user.invoke(acl_broker.address, request, 5.0)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "Need admin permission for request code=17, but accessKey=RocketMQ is not" in (
        response.remark or ""
    )


async def test_without_acl_the_admin_requests_say_it_is_off(
    broker: BrokerController, client: RemotingClient
) -> None:
    with pytest.raises(MQBrokerError) as failed:
        await MQAdminAPI(client).delete_access_config(broker.address, "RocketMQ", 5.0)
    assert failed.value.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
    assert "aclEnable=false" in str(failed.value)


@pytest.mark.slow
async def test_a_changed_file_takes_effect_within_10_s(
    acl_broker: BrokerController, home: Path
) -> None:
    newcomer = await signed_client("lateUser1", "late-secret")
    try:
        refused = await newcomer.invoke(acl_broker.address, a_send("TopicLate"), 5.0)
        assert "No acl config for lateUser1" in (refused.remark or "")
        started = time.monotonic()
        # A new file under conf/acl: RocketMQ's watch loads every *.yml there too.
        extra = home / "conf" / "acl" / "team.yml"
        extra.parent.mkdir()
        extra.write_text(
            "accounts:\n  - accessKey: lateUser1\n    secretKey: late-secret\n"
            "    defaultTopicPerm: PUB\n"
        )

        async def admitted() -> bool:
            response = await newcomer.invoke(acl_broker.address, a_send("TopicLate"), 5.0)
            return response.code == ResponseCode.SUCCESS

        await eventually_async(admitted, timeout_s=10.0, interval_s=0.2)
        assert time.monotonic() - started < 10.0
        # And a change to a file already watched: the account loses its right.
        extra.write_text(
            "accounts:\n  - accessKey: lateUser1\n    secretKey: late-secret\n"
            "    defaultTopicPerm: DENY\n"
        )

        async def refused_again() -> bool:
            response = await newcomer.invoke(acl_broker.address, a_send("TopicLate"), 5.0)
            return response.code == ResponseCode.SYSTEM_ERROR

        await eventually_async(refused_again, timeout_s=10.0, interval_s=0.2)
    finally:
        await newcomer.close()


def java_frame(code: int, fields: dict[str, str], body: bytes, secret_key: str) -> bytes:
    """A request as RocketMQ's Java client writes it after AclClientRPCHook: the signature
    made here by the documented algorithm (HMAC-SHA1 over the extField values sorted by key,
    then the body; Base64), the JSON header as fastjson lays it out."""
    content = "".join(fields[key] for key in sorted(fields)).encode() + body
    signature = base64.b64encode(hmac.new(secret_key.encode(), content, "sha1").digest())
    header = json.dumps(
        {
            "code": code,
            "extFields": {**fields, "Signature": signature.decode()},
            "flag": 0,
            "language": "JAVA",
            "opaque": 7,
            "serializeTypeCurrentRPC": "JSON",
            "version": 409,
        },
        separators=(",", ":"),
    ).encode()
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


async def exchange(address: str, frame: bytes) -> RemotingCommand:
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(frame)
        length = struct.unpack(">i", await reader.readexactly(4))[0]
        return decode_command(await reader.readexactly(length))
    finally:
        writer.close()


async def test_a_request_signed_as_the_java_client_signs_it_over_a_raw_socket(
    acl_broker: BrokerController,
) -> None:
    fields = {
        "AccessKey": "RocketMQ", "a": "PID_JAVA", "b": "TopicJava", "c": "TBW102", "d": "4",
        "e": "0", "f": "0", "g": "1700000000000", "h": "0", "i": "WAIT\x01true\x02",
        "j": "0", "k": "false", "m": "false",
    }  # fmt: skip
    response = await exchange(
        acl_broker.address,
        java_frame(RequestCode.SEND_MESSAGE_V2, fields, b"from java", "12345678"),
    )
    assert (response.code, response.opaque) == (ResponseCode.SUCCESS, 7), response.remark
    # The same frame with the body changed on the way: the signature no longer matches.
    tampered = java_frame(RequestCode.SEND_MESSAGE_V2, fields, b"from java", "12345678")
    tampered = tampered[: -len(b"from java")] + b"from evil"
    refused = await exchange(acl_broker.address, tampered)
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert refused.remark == (
        "org.apache.rocketmq.acl.common.AclException: Check signature failed for "
        "accessKey=RocketMQ, org.apache.rocketmq.acl.plain.PlainPermissionManager.validate("
        "PlainPermissionManager.java:684)"
    )

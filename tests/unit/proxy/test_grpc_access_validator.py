"""The plain ACL over gRPC: requests built as the 5.x clients build them, with the
``authorization`` / ``x-mq-date-time`` metadata their signer makes (hex HMAC-SHA1 of the
date-time), checked against a real plain_acl.yml by the same manager the remoting side
uses: who gets in, with which code (UNAUTHORIZED for the identity, FORBIDDEN for a right)."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from orbitmq.broker.plain_permission_manager import PlainPermissionManager
from orbitmq.proxy.grpc_access_validator import (
    AclCode,
    GrpcAccessValidator,
    GrpcAclError,
    metadata_dict,
    parse_authorization,
    peer_host,
    signature_base64,
)
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb

PLAIN_ACL_YML = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: producerKey
    secretKey: producerSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - orders=PUB
      - audit=SUB
    groupPerms:
      - billing=SUB
  - accessKey: trustedKey
    secretKey: trustedSecret
    whiteRemoteAddress: 192.168.7.*
    defaultTopicPerm: DENY
"""
PEER = "ipv4:127.0.0.1:50123"
DATE = "20261207T111500Z"


def metadata(
    access_key: str = "producerKey", secret: str = "producerSecret", date: str = DATE
) -> dict[str, str]:
    """What the Python client 5.1.2's Signature.metadata sends."""
    signature = hmac.new(secret.encode(), date.encode(), hashlib.sha1).hexdigest()
    return {
        "x-mq-language": "PYTHON",
        "x-mq-protocol": "GRPC_V2",
        "x-mq-client-version": "5.1.2",
        "x-mq-date-time": date,
        "x-mq-client-id": "host@1@0@abc",
        "x-mq-namespace": "",
        "authorization": (
            f"MQv2-HMAC-SHA1 Credential={access_key}, SignedHeaders=x-mq-date-time, "
            f"Signature={signature}"
        ),
    }


@pytest.fixture
def validator(tmp_path: Path) -> GrpcAccessValidator:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    manager = PlainPermissionManager(tmp_path)
    manager.load()
    return GrpcAccessValidator(manager)


def send(topic: str) -> pb.SendMessageRequest:
    message = d.Message(topic=d.Resource(name=topic), body=b"x")
    return pb.SendMessageRequest(messages=[message])


def refusal(validator: GrpcAccessValidator, meta: dict[str, str], request: object) -> GrpcAclError:
    with pytest.raises(GrpcAclError) as caught:
        validator.check(meta, PEER, request)
    return caught.value


def test_parse_authorization_as_the_clients_write_it() -> None:
    header = parse_authorization(
        "MQv2-HMAC-SHA1 Credential=ak/scope, SignedHeaders=x-mq-date-time, Signature=0aff"
    )
    assert header.method == "MQv2-HMAC-SHA1"
    assert header.access_key == "ak"
    assert header.signed_headers == ("x-mq-date-time",)
    assert signature_base64(header.signature_hex) == "Cv8="
    for bad in ("MQv2-HMAC-SHA1", "MQv2-HMAC-SHA1 Credential", "X Signature=00"):
        with pytest.raises(ValueError):
            parse_authorization(bad)
    with pytest.raises(ValueError, match="not hex"):
        signature_base64("zz")


def test_peer_hosts_and_metadata() -> None:
    assert peer_host("ipv4:10.0.0.5:4000") == "10.0.0.5"
    assert peer_host("ipv6:[::1]:4000") == "::1"
    assert metadata_dict([("Authorization", "a"), ("x-bin", b"\x00"), ("authorization", "b")]) == {
        "authorization": "a"
    }


def test_allowed_send_returns_the_access_key(validator: GrpcAccessValidator) -> None:
    assert validator.check(metadata(), PEER, send("orders")) == "producerKey"
    route = pb.QueryRouteRequest(topic=d.Resource(name="audit"))
    assert validator.check(metadata(), PEER, route) == "producerKey"  # ANY: SUB is enough


def test_a_right_not_granted_is_forbidden(validator: GrpcAccessValidator) -> None:
    error = refusal(validator, metadata(), send("audit"))
    assert error.code is AclCode.FORBIDDEN
    assert error.message == "No default permission for topic:audit"
    receive = pb.ReceiveMessageRequest(
        group=d.Resource(name="other"), message_queue=d.MessageQueue(topic=d.Resource(name="audit"))
    )
    assert (
        refusal(validator, metadata(), receive).message == "No default permission for group:other"
    )


def test_forged_credentials_are_unauthorized(validator: GrpcAccessValidator) -> None:
    forged = refusal(validator, metadata(secret="guessed"), send("orders"))
    assert forged.code is AclCode.UNAUTHORIZED
    assert forged.message == "Check signature failed for accessKey=producerKey"
    # The signature covers the date-time: a replayed signature with another date fails.
    replayed = metadata()
    replayed["x-mq-date-time"] = "20261207T111501Z"
    assert refusal(validator, replayed, send("orders")).code is AclCode.UNAUTHORIZED
    unknown = refusal(validator, metadata(access_key="nobody"), send("orders"))
    assert (unknown.code, unknown.message) == (AclCode.UNAUTHORIZED, "No acl config for nobody")
    anonymous = metadata()
    del anonymous["authorization"]
    assert refusal(validator, anonymous, send("orders")).code is AclCode.UNAUTHORIZED
    garbled = metadata()
    garbled["authorization"] = "MQv2-HMAC-SHA1 Credential=producerKey, Signature=not-hex"
    assert "not hex" in refusal(validator, garbled, send("orders")).message


def test_unreadable_requests_are_refused(validator: GrpcAccessValidator) -> None:
    empty = refusal(validator, metadata(), pb.SendMessageRequest())
    assert empty.message == "SendMessageRequest, messageCount is zero"
    mixed = pb.SendMessageRequest(messages=[*send("orders").messages, *send("audit").messages])
    assert "not consistent" in refusal(validator, metadata(), mixed).message
    consumer = pb.HeartbeatRequest(client_type=d.SIMPLE_CONSUMER)
    assert "doesn't have group" in refusal(validator, metadata(), consumer).message


def test_telemetry_settings_need_every_declared_right(validator: GrpcAccessValidator) -> None:
    publishing = d.Settings(publishing=d.Publishing(topics=[d.Resource(name="orders")]))
    assert validator.check(metadata(), PEER, pb.TelemetryCommand(settings=publishing))
    wider = d.Settings(
        publishing=d.Publishing(topics=[d.Resource(name="orders"), d.Resource(name="audit")])
    )
    error = refusal(validator, metadata(), pb.TelemetryCommand(settings=wider))
    assert (error.code, error.message) == (
        AclCode.FORBIDDEN,
        "No default permission for topic:audit",
    )
    subscription = d.Settings(
        subscription=d.Subscription(
            group=d.Resource(name="billing"),
            subscriptions=[d.SubscriptionEntry(topic=d.Resource(name="audit"))],
        )
    )
    assert validator.check(metadata(), PEER, pb.TelemetryCommand(settings=subscription))
    # An answer to a server command needs only the signature.
    answer = pb.TelemetryCommand(thread_stack_trace=pb.ThreadStackTrace(nonce="n"))
    assert validator.check(metadata(), PEER, answer) == "producerKey"


def test_white_addresses(validator: GrpcAccessValidator) -> None:
    anonymous = {"x-mq-client-id": "c"}
    assert validator.check(anonymous, "ipv4:10.10.103.7:1", send("anything")) is None
    # An account's white address needs its key but no valid signature.
    trusted = metadata(access_key="trustedKey", secret="wrong")
    assert validator.check(trusted, "ipv4:192.168.7.1:1", send("orders")) == "trustedKey"
    assert refusal(validator, trusted, send("orders")).code is AclCode.UNAUTHORIZED

"""``GrpcAccessValidator``: the plain ACL (``plain_acl.yml``, the same
``PlainPermissionManager`` the remoting servers use) applied to the gRPC endpoint, as
RocketMQ 5's proxy applies it (its ``AuthenticationInterceptor`` and
``PlainAccessResource.parse(GeneratedMessageV3, AuthenticationHeader)``).

The 5.x clients sign every call with gRPC metadata::

    authorization: MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time,
                   Signature=<hex of HMAC-SHA1(secretKey, x-mq-date-time)>
    x-mq-date-time: 20261207T111500Z
    x-mq-session-token, x-mq-client-id, x-mq-language, x-mq-client-version, x-mq-protocol,
    x-mq-request-id, x-mq-namespace

The signed content is the date-time header's UTF-8 bytes; the hex signature is compared as
the Base64 of the same bytes, which is what the manager computes for remoting requests. What
each request needs, by its message type (RocketMQ 5's table):

======================================  ==============================================
QueryRouteRequest                       ANY (PUB or SUB) on ``topic``
HeartbeatRequest (a consumer)           SUB on ``group``
SendMessageRequest                      PUB on the messages' one topic
ReceiveMessageRequest                   SUB on ``group`` and ``message_queue.topic``
AckMessageRequest, ChangeInvisible-     SUB on ``group`` and ``topic``
DurationRequest, ForwardMessageToDead-
LetterQueueRequest, QueryAssignment-
Request
EndTransactionRequest, RecallMessage-   PUB on ``topic``
Request
NotifyClientTerminationRequest          SUB on ``group`` (when given)
TelemetryCommand with settings          PUB on each publishing topic; SUB on the
                                        subscription's group and each of its topics
======================================  ==============================================

Any other request needs only a valid signature. A refused identity (no or a malformed
``authorization``, an unknown access key, a bad signature) is UNAUTHORIZED; a refused right
is FORBIDDEN. RocketMQ 5.3's proxy answers UNAUTHORIZED for both; the two codes are the API's
own split, and every 5.x client treats both as final.
"""

from __future__ import annotations

import binascii
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from orbitmq.broker.plain_access_resource import (
    AclRefusedError,
    Permission,
    PlainAccessResource,
)
from orbitmq.broker.plain_permission_manager import PlainPermissionManager
from orbitmq.protocol import RequestCode

#: The metadata keys the 5.x clients send (RocketMQ's InterceptorConstants / GrpcConstants).
AUTHORIZATION: Final = "authorization"
DATE_TIME: Final = "x-mq-date-time"
SESSION_TOKEN: Final = "x-mq-session-token"
CLIENT_ID: Final = "x-mq-client-id"
NAMESPACE: Final = "x-mq-namespace"
LANGUAGE: Final = "x-mq-language"
CLIENT_VERSION: Final = "x-mq-client-version"
PROTOCOL_VERSION: Final = "x-mq-protocol"
REQUEST_ID: Final = "x-mq-request-id"
#: The one signing algorithm the clients use.
ALGORITHM: Final = "MQv2-HMAC-SHA1"

_PACKAGE: Final = "apache.rocketmq.v2."
#: ClientType values of a consumer (PUSH_CONSUMER, SIMPLE_CONSUMER, PULL_CONSUMER).
_CONSUMER_TYPES: Final = frozenset({2, 3, 4})


class AclCode(enum.IntEnum):
    """The ``apache.rocketmq.v2.Code`` values an ACL refusal answers with."""

    UNAUTHORIZED = 40100
    FORBIDDEN = 40300


class GrpcAclError(Exception):
    """A refused gRPC request: ``code`` and ``message`` go into the response's Status."""

    def __init__(self, code: AclCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class AuthorizationHeader:
    """The parts of an ``authorization`` value (RocketMQ's ``AuthorizationHeader``)."""

    method: str
    access_key: str
    signed_headers: tuple[str, ...]
    signature_hex: str


def parse_authorization(text: str) -> AuthorizationHeader:
    """Split ``MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=h1;h2, Signature=hex``. The
    credential may carry a scope after ``/`` (only the key before it counts). ValueError
    names what is wrong."""
    method, sep, rest = text.strip().partition(" ")
    if not sep or not rest.strip():
        raise ValueError("authorization header is incorrect")
    fields: dict[str, str] = {}
    for item in rest.split(","):
        name, eq, value = item.strip().partition("=")
        if not eq:
            raise ValueError(f"authorization item {item.strip()!r} is not name=value")
        fields[name] = value
    access_key = fields.get("Credential", "").split("/")[0]
    if not access_key:
        raise ValueError("authorization header has no Credential")
    signature = fields.get("Signature", "")
    if not signature:
        raise ValueError("authorization header has no Signature")
    signed = tuple(h for h in fields.get("SignedHeaders", "").split(";") if h)
    return AuthorizationHeader(method, access_key, signed, signature)


def signature_base64(signature_hex: str) -> str:
    """The hex signature as the Base64 the manager compares (``hexToBase64``)."""
    try:
        raw = binascii.unhexlify(signature_hex)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"authorization Signature is not hex: {exc}") from exc
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


def metadata_dict(metadata: Iterable[tuple[str, str | bytes]] | None) -> dict[str, str]:
    """gRPC invocation metadata as a dict of text values (the first of a repeated key;
    binary ``-bin`` values are skipped)."""
    result: dict[str, str] = {}
    for key, value in metadata or ():
        if isinstance(value, str):
            result.setdefault(key.lower(), value)
    return result


def peer_host(peer: str) -> str:
    """The host of a gRPC peer string (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000``)."""
    kind, _, address = peer.partition(":")
    if kind == "unix" or not address:
        return "127.0.0.1" if kind == "unix" else peer
    host, sep, _ = address.rpartition(":")
    return (host if sep else address).strip("[]")


# -- what each request needs --------------------------------------------------------------

_Needs = Callable[[PlainAccessResource, Any], None]
_SUB = Permission.SUB
_PUB = Permission.PUB


def _name(resource: Any) -> str | None:
    """A Resource's name with its namespace (``wrapResourceWithNamespace``), None when
    empty."""
    name = str(resource.name)
    if not name:
        return None
    namespace = str(getattr(resource, "resource_namespace", ""))
    return f"{namespace}%{name}" if namespace else name


def _group_and_topic(resource: PlainAccessResource, request: Any) -> None:
    resource.add_group(_name(request.group), _SUB)
    resource.add_resource_and_perm(_name(request.topic), _SUB)


def _heartbeat(resource: PlainAccessResource, request: Any) -> None:
    if int(request.client_type) in _CONSUMER_TYPES:
        if not request.HasField("group") or not request.group.name:
            raise ValueError("Consumer heartbeat doesn't have group")
        resource.add_group(_name(request.group), _SUB)


def _send(resource: PlainAccessResource, request: Any) -> None:
    if not request.messages:
        raise ValueError("SendMessageRequest, messageCount is zero")
    topics = {_name(message.topic) for message in request.messages}
    if len(topics) != 1:
        raise ValueError("SendMessageRequest, messages' topic is not consistent")
    resource.add_resource_and_perm(topics.pop(), _PUB)


def _receive(resource: PlainAccessResource, request: Any) -> None:
    resource.add_group(_name(request.group), _SUB)
    resource.add_resource_and_perm(_name(request.message_queue.topic), _SUB)


def _publish(resource: PlainAccessResource, request: Any) -> None:
    resource.add_resource_and_perm(_name(request.topic), _PUB)


def _route(resource: PlainAccessResource, request: Any) -> None:
    resource.add_resource_and_perm(_name(request.topic), Permission.ANY)


def _terminate(resource: PlainAccessResource, request: Any) -> None:
    if request.HasField("group"):
        resource.add_group(_name(request.group), _SUB)


def _telemetry(resource: PlainAccessResource, command: Any) -> None:
    if command.WhichOneof("command") != "settings":
        return
    settings = command.settings
    if settings.HasField("publishing"):
        for topic in settings.publishing.topics:
            resource.add_resource_and_perm(_name(topic), _PUB)
    if settings.HasField("subscription"):
        resource.add_group(_name(settings.subscription.group), _SUB)
        for entry in settings.subscription.subscriptions:
            resource.add_resource_and_perm(_name(entry.topic), _SUB)
    if not settings.HasField("publishing") and not settings.HasField("subscription"):
        raise ValueError("settings command doesn't have publishing or subscription")


#: Message type -> (what it needs, the remoting request code it stands for: RocketMQ's
#: RequestMapping; the code matters only for the admin check, which none of these need).
_NEEDS: Final[dict[str, tuple[_Needs | None, int]]] = {
    "QueryRouteRequest": (_route, RequestCode.GET_ROUTEINFO_BY_TOPIC),
    "HeartbeatRequest": (_heartbeat, RequestCode.HEART_BEAT),
    "SendMessageRequest": (_send, RequestCode.SEND_MESSAGE_V2),
    "QueryAssignmentRequest": (_group_and_topic, RequestCode.GET_ROUTEINFO_BY_TOPIC),
    "ReceiveMessageRequest": (_receive, RequestCode.PULL_MESSAGE),
    "AckMessageRequest": (_group_and_topic, RequestCode.UPDATE_CONSUMER_OFFSET),
    "ForwardMessageToDeadLetterQueueRequest": (
        _group_and_topic,
        RequestCode.CONSUMER_SEND_MSG_BACK,
    ),
    "EndTransactionRequest": (_publish, RequestCode.END_TRANSACTION),
    "NotifyClientTerminationRequest": (_terminate, RequestCode.UNREGISTER_CLIENT),
    "ChangeInvisibleDurationRequest": (_group_and_topic, RequestCode.CONSUMER_SEND_MSG_BACK),
    "RecallMessageRequest": (_publish, RequestCode.RECALL_MESSAGE),
    "TelemetryCommand": (_telemetry, RequestCode.HEART_BEAT),
}


def needed_resource(
    request: Any, header: AuthorizationHeader, date_time: str, session_token: str | None
) -> PlainAccessResource:
    """What ``request`` (a generated protobuf message) needs, with the signed content.
    GrpcAclError UNAUTHORIZED when the request cannot be read for the check."""
    full_name = str(request.DESCRIPTOR.full_name)
    short = full_name.removeprefix(_PACKAGE)
    needs, code = _NEEDS.get(short, (None, 0))
    resource = PlainAccessResource(
        access_key=header.access_key,
        signature=signature_base64(header.signature_hex),
        security_token=session_token,
        request_code=code,
        content=date_time.encode("utf-8"),
    )
    if needs is not None:
        try:
            needs(resource, request)
        except (ValueError, AttributeError) as exc:
            raise GrpcAclError(AclCode.UNAUTHORIZED, str(exc)) from exc
    return resource


class GrpcAccessValidator:
    """Checks each gRPC request against the broker's plain ACL. Stateless over its manager;
    use from the broker's event loop (as the manager)."""

    def __init__(self, manager: PlainPermissionManager) -> None:
        self.manager = manager

    def check(self, metadata: dict[str, str], peer: str, request: Any) -> str | None:
        """The access key that ``request`` was allowed for (None: a white address let it in
        without one). GrpcAclError says why not."""
        host = peer_host(peer)
        text = metadata.get(AUTHORIZATION)
        date_time = metadata.get(DATE_TIME, "")
        try:
            if text is None:
                raise ValueError("No accessKey is configured: the request has no authorization")
            header = parse_authorization(text)
            if header.method != ALGORITHM:
                raise ValueError(f"authorization method {header.method} is not {ALGORITHM}")
            needed = needed_resource(request, header, date_time, metadata.get(SESSION_TOKEN))
        except ValueError as exc:
            if self._white_listed(host):
                return None
            raise GrpcAclError(AclCode.UNAUTHORIZED, str(exc)) from exc
        try:
            self.manager.validate(needed, host)
        except AclRefusedError as exc:
            code = AclCode.UNAUTHORIZED if exc.authentication else AclCode.FORBIDDEN
            raise GrpcAclError(code, exc.reason) from exc
        return needed.access_key

    def _white_listed(self, host: str) -> bool:
        # A global white address needs no credentials at all (as on the remoting side).
        probe = PlainAccessResource()
        try:
            self.manager.validate(probe, host)
        except AclRefusedError:
            return False
        return True

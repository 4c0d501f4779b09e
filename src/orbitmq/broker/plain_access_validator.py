"""``PlainAccessValidator``: the broker's server RPC hook when aclEnable=true (RocketMQ 4.9.8's
class of that name, wired by BrokerController.initialAcl). It reads what a request needs
(``parse``) and has the ``PlainPermissionManager`` check it before any processor runs.

What each request code needs, as RocketMQ 4.9.8 reads it from the request (any other code
needs only a valid signature, plus admin rights for the admin codes):

=============================  =========================================================
SEND_MESSAGE (10)              PUB on ``topic``; a retry topic: SUB on group ``group``
SEND_MESSAGE_V2 (310)          PUB on ``b``; a retry topic: SUB on group ``a``
CONSUMER_SEND_MSG_BACK (36)    SUB on group ``group``
PULL_MESSAGE (11)              SUB on ``topic`` and on group ``consumerGroup``
QUERY_MESSAGE (12)             SUB on ``topic``
HEART_BEAT (34)                SUB on each consumer group and each topic it subscribes to
UNREGISTER_CLIENT (35)         SUB on group ``consumerGroup``
GET_CONSUMER_LIST_BY_GROUP (38)  SUB on group ``consumerGroup``
UPDATE_CONSUMER_OFFSET (15)    SUB on group ``consumerGroup`` and on ``topic``
RECALL_MESSAGE (370)           PUB on ``topic`` (RocketMQ 5.3's action for it)
=============================  =========================================================
"""

from __future__ import annotations

from collections.abc import Callable

from orbitmq.broker.plain_access_resource import Permission, PlainAccessResource, is_retry_topic
from orbitmq.broker.plain_permission_manager import PlainPermissionManager
from orbitmq.protocol import HeartbeatData, RemotingCommand, RequestCode, acl_signer
from orbitmq.remoting import RequestRefusedError

_SUB = Permission.SUB
_PUB = Permission.PUB
#: Where RocketMQ 4.9.8 wraps a request it cannot read (PlainAccessValidator.java:134).
_PARSE_FAILED = (
    "org.apache.rocketmq.acl.common.AclException: {message}, "
    "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"
)


def _send(topic_key: str, group_key: str) -> Callable[[PlainAccessResource, RemotingCommand], None]:
    def needs(resource: PlainAccessResource, request: RemotingCommand) -> None:
        fields = request.ext_fields
        topic = fields.get(topic_key)
        if is_retry_topic(topic):
            resource.add_group(fields.get(group_key), _SUB)
        else:
            resource.add_resource_and_perm(topic, _PUB)

    return needs


def _groups(*keys: str) -> Callable[[PlainAccessResource, RemotingCommand], None]:
    def needs(resource: PlainAccessResource, request: RemotingCommand) -> None:
        for key in keys:
            resource.add_group(request.ext_fields.get(key), _SUB)

    return needs


def _subs(
    topic_key: str, *group_keys: str
) -> Callable[[PlainAccessResource, RemotingCommand], None]:
    def needs(resource: PlainAccessResource, request: RemotingCommand) -> None:
        resource.add_resource_and_perm(request.ext_fields.get(topic_key), _SUB)
        for key in group_keys:
            resource.add_group(request.ext_fields.get(key), _SUB)

    return needs


def _heartbeat(resource: PlainAccessResource, request: RemotingCommand) -> None:
    heartbeat = HeartbeatData.from_json(request.body)
    for consumer in heartbeat.consumer_data_set:
        resource.add_group(consumer.group_name, _SUB)
        for subscription in consumer.subscription_data_set:
            resource.add_resource_and_perm(subscription.topic, _SUB)


_NEEDS: dict[int, Callable[[PlainAccessResource, RemotingCommand], None]] = {
    RequestCode.SEND_MESSAGE: _send("topic", "group"),
    RequestCode.SEND_MESSAGE_V2: _send("b", "a"),
    RequestCode.CONSUMER_SEND_MSG_BACK: _groups("group"),
    RequestCode.PULL_MESSAGE: _subs("topic", "consumerGroup"),
    RequestCode.QUERY_MESSAGE: _subs("topic"),
    RequestCode.HEART_BEAT: _heartbeat,
    RequestCode.UNREGISTER_CLIENT: _groups("consumerGroup"),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: _groups("consumerGroup"),
    RequestCode.UPDATE_CONSUMER_OFFSET: _subs("topic", "consumerGroup"),
    RequestCode.RECALL_MESSAGE: _send("topic", "producerGroup"),
}


def peer_host(remote_addr: str) -> str:
    """The host of ``host:port`` (RocketMQ cuts at the last colon)."""
    host, sep, _ = remote_addr.rpartition(":")
    return host.strip("[]") if sep else remote_addr


def parse(request: RemotingCommand) -> PlainAccessResource:
    """What ``request`` needs and the content its signature covers (``parse``)."""
    fields = request.ext_fields
    resource = PlainAccessResource(
        access_key=fields.get(acl_signer.ACCESS_KEY),
        signature=fields.get(acl_signer.SIGNATURE),
        security_token=fields.get(acl_signer.SECURITY_TOKEN),
        request_code=request.code,
    )
    needs = _NEEDS.get(request.code)
    if needs is not None:
        try:
            needs(resource, request)
        except Exception as exc:
            raise RequestRefusedError(_PARSE_FAILED.format(message=exc)) from exc
    resource.content = acl_signer.broker_request_content(fields, request.body)
    return resource


class PlainAccessValidator:
    """The server RPC hook: refuses (RequestRefusedError) what the manager does not allow.
    Stateless over its manager; safe from any task of the broker's loop."""

    def __init__(self, manager: PlainPermissionManager) -> None:
        self.manager = manager

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
        self.manager.validate(parse(request), peer_host(remote_addr))

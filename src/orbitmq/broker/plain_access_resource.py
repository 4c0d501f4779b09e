"""Plain ACL permissions (RocketMQ 4.9.8's ``Permission``, ``PlainAccessResource``,
``AclException``): the permission bits, an account's rights, what one request needs, and the
refusal a failed check answers with.

A resource is a topic, or a group written as its retry topic (``%RETRY%group``), as in
RocketMQ: a group's rights and a retry topic's are the same entry.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX, retry_topic
from orbitmq.protocol import RequestCode
from orbitmq.remoting import RequestRefusedError


class Permission(enum.IntFlag):
    """RocketMQ's permission bits (``Permission.DENY`` ... ``SUB``)."""

    DENY = 1
    ANY = 1 << 1
    PUB = 1 << 2
    SUB = 1 << 3


#: Requests only an admin account may send (``Permission.ADMIN_CODE``).
ADMIN_CODES: Final = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)
_PERMS: Final = {
    "PUB": Permission.PUB,
    "SUB": Permission.SUB,
    "PUB|SUB": Permission.PUB | Permission.SUB,
    "SUB|PUB": Permission.PUB | Permission.SUB,
    "DENY": Permission.DENY,
}
#: Where RocketMQ 4.9.8 raises each refusal: its remark names the class and source line.
_ACL_EXCEPTION: Final = "org.apache.rocketmq.acl.common.AclException"
_MANAGER: Final = "org.apache.rocketmq.acl.plain.PlainPermissionManager"


def parse_perm(text: str | None) -> Permission:
    """``Permission.parsePermFromString``: anything unknown (or nothing) is DENY."""
    return _PERMS.get(text.strip(), Permission.DENY) if text is not None else Permission.DENY


def is_valid_perm(text: str) -> bool:
    return text.strip() in _PERMS


def check_permission(needed: Permission, owned: Permission) -> bool:
    """``Permission.checkPermission``: DENY wins; ANY is met by PUB or SUB."""
    if owned & Permission.DENY:
        return False
    if needed & Permission.ANY:
        return bool(owned & (Permission.PUB | Permission.SUB))
    return bool(needed & owned)


def is_retry_topic(resource: str | None) -> bool:
    return resource is not None and resource.startswith(RETRY_GROUP_TOPIC_PREFIX)


def print_str(resource: str, is_group: bool) -> str:
    """``PlainAccessResource.printStr``: ``group:G`` or ``topic:T``."""
    if is_group:
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX) :]}"
    return f"topic:{resource}"


class AclRefusedError(RequestRefusedError):
    """A failed ACL check. ``remark`` is what remoting answers; ``reason`` is the plain
    message and ``authentication`` says whether the caller's identity failed (unknown or
    missing key, bad signature) rather than its rights: the gRPC endpoint answers
    UNAUTHORIZED or FORBIDDEN from these."""

    def __init__(self, remark: str, reason: str, authentication: bool) -> None:
        super().__init__(remark)
        self.reason = reason
        self.authentication = authentication


def acl_refusal(message: str, method: str, line: int) -> AclRefusedError:
    """The refusal RocketMQ 4.9.8 answers with: SYSTEM_ERROR whose remark is the
    AclException and the frame that raised it (``RemotingHelper.exceptionSimpleDesc``),
    ``...AclException: <message>, ...PlainPermissionManager.<method>(....java:<line>)``.
    ``validate`` refuses an identity, ``checkPerm`` a right."""
    return AclRefusedError(
        f"{_ACL_EXCEPTION}: {message}, {_MANAGER}.{method}(PlainPermissionManager.java:{line})",
        message,
        authentication=method == "validate",
    )


@dataclass(slots=True)
class PlainAccessResource:
    """What one request needs (``parse``), or what one account owns (``plain_acl.yml``).
    Plain data: built and read by one task."""

    access_key: str | None = None
    secret_key: str = ""
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: Permission = Permission.DENY
    default_group_perm: Permission = Permission.DENY
    #: Topic or retry topic -> permission.
    resource_perms: dict[str, Permission] = field(default_factory=dict)
    request_code: int = 0
    #: A request's signed bytes and its Signature, SecurityToken.
    content: bytes = b""
    signature: str | None = None
    security_token: str | None = None

    def add_resource_and_perm(self, resource: str | None, perm: Permission) -> None:
        if resource is not None:
            self.resource_perms[resource] = perm

    def add_group(self, group: str | None, perm: Permission) -> None:
        """A group's right, kept under its retry topic (RocketMQ's getRetryTopic)."""
        if group is not None:
            self.resource_perms[retry_topic(group)] = perm

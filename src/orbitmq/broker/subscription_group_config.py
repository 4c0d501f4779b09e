"""The body subscriptionGroup.json holds (``SubscriptionGroupManager`` as fastjson writes it)
and the system groups; a group's settings, ``SubscriptionGroupConfig``, are a wire body
(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) and live in ``orbitmq.protocol.body``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from orbitmq.common import TOOLS_CONSUMER_GROUP
from orbitmq.protocol.body import Body, DataVersion, SubscriptionGroupConfig

#: Groups RocketMQ creates whenever they are asked for, whatever autoCreateSubscriptionGroup
#: says (``MixAll.isSysConsumerGroup``).
CID_RMQ_SYS_PREFIX: Final = "CID_RMQ_SYS_"
FILTERSRV_CONSUMER_GROUP: Final = "FILTERSRV_CONSUMER"
SELF_TEST_CONSUMER_GROUP: Final = "SELF_TEST_C_GROUP"
ONS_HTTP_PROXY_GROUP: Final = "CID_ONS-HTTP-PROXY"
CID_ONSAPI_PERMISSION_GROUP: Final = "CID_ONSAPI_PERMISSION"
CID_ONSAPI_OWNER_GROUP: Final = "CID_ONSAPI_OWNER"
CID_ONSAPI_PULL_GROUP: Final = "CID_ONSAPI_PULL"
CID_SYS_RMQ_TRANS: Final = "CID_RMQ_SYS_TRANS"


def is_sys_consumer_group(group: str) -> bool:
    return group.startswith(CID_RMQ_SYS_PREFIX)


#: Groups of RocketMQ's own tools and services that pull (``MixAll``'s names).
DEFAULT_CONSUMER_GROUP: Final = "DEFAULT_CONSUMER"
SCHEDULE_CONSUMER_GROUP: Final = "SCHEDULE_CONSUMER"
MONITOR_CONSUMER_GROUP: Final = "__MONITOR_CONSUMER"
_SYS_PULL_GROUPS: Final = frozenset(
    {
        DEFAULT_CONSUMER_GROUP,
        TOOLS_CONSUMER_GROUP,
        SCHEDULE_CONSUMER_GROUP,
        FILTERSRV_CONSUMER_GROUP,
        MONITOR_CONSUMER_GROUP,
        SELF_TEST_CONSUMER_GROUP,
        ONS_HTTP_PROXY_GROUP,
        CID_ONSAPI_PERMISSION_GROUP,
        CID_ONSAPI_OWNER_GROUP,
        CID_ONSAPI_PULL_GROUP,
        CID_SYS_RMQ_TRANS,
    }
)


def is_sys_consumer_group_pull_message(group: str) -> bool:
    """A group of RocketMQ's own tools or services (``MixAll.isSysConsumerGroupPullMessage``):
    its reads are never counted or held by the cold data flow control."""
    return group in _SYS_PULL_GROUPS or group.startswith(CID_RMQ_SYS_PREFIX)


@dataclass(slots=True)
class SubscriptionGroupWrapper(Body):
    """subscriptionGroup.json: every group by name and the version of that table."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

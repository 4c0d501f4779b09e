"""Topic route data: what GET_ROUTEINFO_BY_TOPIC (105) answers, as RocketMQ's name server
writes it (``TopicRouteData`` with its ``QueueData`` and ``BrokerData``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from orbitmq.protocol.body.json_codec import Body

#: The broker id of a master (RocketMQ's ``MixAll.MASTER_ID``).
MASTER_ID: Final = 0


@dataclass(slots=True)
class QueueData(Body):
    """How many queues one broker serves for a topic, and their permissions."""

    broker_name: str = ""
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0


@dataclass(slots=True)
class BrokerData(Body):
    """One broker group: its cluster, its name and the address of each broker id.

    On the wire the ids are map keys; fastjson writes them unquoted (``{0:"host:port"}``).
    """

    cluster: str = ""
    broker_name: str = ""
    broker_addrs: dict[int, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str | None:
        """The address of broker id 0, if the master is registered."""
        return self.broker_addrs.get(MASTER_ID)


@dataclass(slots=True)
class TopicRouteData(Body):
    """Where a topic lives: queue counts per broker and the brokers' addresses."""

    order_topic_conf: str | None = None
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    #: Filter servers per broker address (a RocketMQ 3 feature; kept for the shape).
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

"""``AdminBase``: what the ``AdminClient`` mixins (``GroupAdmin``, ``BrokerAdmin``,
``AclAdmin``) use of the admin client they are mixed into, declared once."""

from __future__ import annotations

from abc import ABC, abstractmethod

from orbitmq.client.admin_api import MQAdminAPI
from orbitmq.client.mq_client_instance import ClientConfig
from orbitmq.protocol import ClusterInfo, TopicRouteData


class AdminBase(ABC):
    """The members ``AdminClient`` provides to its mixins. Owns nothing; use from the admin
    client's event loop."""

    api: MQAdminAPI
    config: ClientConfig

    @property
    @abstractmethod
    def _timeout_s(self) -> float: ...

    @abstractmethod
    def _check_started(self) -> None: ...

    @abstractmethod
    async def cluster_info(self) -> ClusterInfo: ...

    @abstractmethod
    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]: ...

    @abstractmethod
    async def topic_route(self, topic: str) -> TopicRouteData: ...

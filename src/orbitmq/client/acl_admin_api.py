"""``AclAdminAPI``: the plain ACL admin requests of RocketMQ 4.9's ``MQClientAPIImpl``
(createPlainAccessConfig, deleteAccessConfig, updateGlobalWhiteAddrsConfig,
getBrokerClusterAclInfo and 4.9.4's getBrokerClusterConfig), typed; each sends one request to
one broker and turns a failure into ``MQBrokerError``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from orbitmq.client.mq_client_api import MQClientAPI
from orbitmq.protocol import RequestCode
from orbitmq.protocol.header import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)


@dataclass(frozen=True, slots=True)
class PlainAccessConfig:
    """One account of a broker's plain ACL (RocketMQ's ``PlainAccessConfig``). Perm lists
    hold ``name=PERM`` items (PERM: PUB, SUB, PUB|SUB or DENY)."""

    access_key: str
    secret_key: str
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: tuple[str, ...] | None = None
    group_perms: tuple[str, ...] | None = None


class AclAdminAPI(MQClientAPI):
    """``MQClientAPI`` plus the ACL requests. Owns nothing but the shared
    ``RemotingClient``; safe to share between tasks of one event loop."""

    async def create_plain_access_config(
        self, addr: str, config: PlainAccessConfig, timeout_s: float
    ) -> None:
        """UPDATE_AND_CREATE_ACL_CONFIG (50): add the account or update its fields."""
        header = CreateAccessConfigRequestHeader(
            access_key=config.access_key,
            secret_key=config.secret_key,
            white_remote_address=config.white_remote_address,
            admin=config.admin,
            default_topic_perm=config.default_topic_perm,
            default_group_perm=config.default_group_perm,
            topic_perms=None if config.topic_perms is None else ",".join(config.topic_perms),
            group_perms=None if config.group_perms is None else ",".join(config.group_perms),
        )
        await self._ok(
            addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header.to_ext_fields(), b"", timeout_s
        )

    async def delete_access_config(self, addr: str, access_key: str, timeout_s: float) -> None:
        """DELETE_ACL_CONFIG (51)."""
        header = DeleteAccessConfigRequestHeader(access_key=access_key)
        await self._ok(addr, RequestCode.DELETE_ACL_CONFIG, header.to_ext_fields(), b"", timeout_s)

    async def update_global_white_addrs_config(
        self, addr: str, addresses: list[str], acl_file_full_path: str | None, timeout_s: float
    ) -> None:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): replace the file's global white list."""
        header = UpdateGlobalWhiteAddrsConfigRequestHeader(
            global_white_addrs=",".join(addresses), acl_file_full_path=acl_file_full_path
        )
        await self._ok(
            addr,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
            header.to_ext_fields(),
            b"",
            timeout_s,
        )

    async def get_broker_cluster_acl_info(
        self, addr: str, timeout_s: float
    ) -> GetBrokerAclConfigResponseHeader:
        """GET_BROKER_CLUSTER_ACL_INFO (52): the ACL files' data versions."""
        response = await self._ok(
            addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO, timeout_s=timeout_s
        )
        return GetBrokerAclConfigResponseHeader.from_ext_fields(response.ext_fields)

    async def get_broker_cluster_acl_config(self, addr: str, timeout_s: float) -> dict[str, Any]:
        """GET_BROKER_CLUSTER_ACL_CONFIG (54): ``globalWhiteAddrs`` and ``plainAccessConfigs``."""
        response = await self._ok(
            addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, timeout_s=timeout_s
        )
        body: dict[str, Any] = orjson.loads(response.body)
        return body

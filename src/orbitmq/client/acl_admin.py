"""``AclAdmin``: the ``AdminClient``'s plain ACL operations (mqadmin's updateAclConfig,
deleteAclConfig, updateGlobalWhiteAddr, clusterAclConfigVersion, getAccessConfigSubCommand):
on one broker (``broker_addr``) or on every broker, master and slave, of a cluster (all
clusters when None), as mqadmin's ``-c`` does."""

from __future__ import annotations

from typing import Any

from orbitmq.client.acl_admin_api import PlainAccessConfig
from orbitmq.client.admin_base import AdminBase
from orbitmq.client.errors import MQClientError
from orbitmq.protocol.header import GetBrokerAclConfigResponseHeader


class AclAdmin(AdminBase):
    """A mixin of ``AdminClient``, which provides the members declared abstract here and in
    ``AdminBase``. Owns nothing; use from the admin client's event loop."""

    async def _acl_brokers(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        """``broker_addr``, or every broker (each id) of ``cluster`` (all when None)."""
        self._check_started()
        if broker_addr is not None:
            return [broker_addr]
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            known = ", ".join(sorted(info.cluster_addr_table)) or "none"
            raise MQClientError(f"cluster {cluster!r} is not known (clusters: {known})")
        names = info.cluster_addr_table[cluster] if cluster is not None else info.broker_addr_table
        return [
            addr
            for name in sorted(names)
            if (data := info.broker_addr_table.get(name)) is not None
            for _, addr in sorted(data.broker_addrs.items())
        ]

    async def update_acl_config(
        self,
        config: PlainAccessConfig,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
    ) -> list[str]:
        """Add or update the account on each broker; the brokers' addresses."""
        addrs = await self._acl_brokers(cluster, broker_addr)
        for addr in addrs:
            await self.api.create_plain_access_config(addr, config, self._timeout_s)
        return addrs

    async def delete_acl_config(
        self, access_key: str, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        """Remove the account from each broker; the brokers' addresses."""
        addrs = await self._acl_brokers(cluster, broker_addr)
        for addr in addrs:
            await self.api.delete_access_config(addr, access_key, self._timeout_s)
        return addrs

    async def update_global_white_addrs(
        self,
        addresses: list[str],
        *,
        acl_file: str | None = None,
        cluster: str | None = None,
        broker_addr: str | None = None,
    ) -> list[str]:
        """Replace globalWhiteRemoteAddresses (of ``acl_file``, default plain_acl.yml)."""
        addrs = await self._acl_brokers(cluster, broker_addr)
        for addr in addrs:
            await self.api.update_global_white_addrs_config(
                addr, addresses, acl_file, self._timeout_s
            )
        return addrs

    async def cluster_acl_config_version(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[GetBrokerAclConfigResponseHeader]:
        """Each broker's ACL data versions (mqadmin clusterAclConfigVersion)."""
        return [
            await self.api.get_broker_cluster_acl_info(addr, self._timeout_s)
            for addr in await self._acl_brokers(cluster, broker_addr)
        ]

    async def acl_config(self, broker_addr: str) -> dict[str, Any]:
        """The broker's accounts and global white addresses."""
        self._check_started()
        return await self.api.get_broker_cluster_acl_config(broker_addr, self._timeout_s)

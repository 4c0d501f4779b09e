"""Replication: the broker's side of HA log shipping. A master serves its commit log on
haListenPort (``HAService``); a slave copies its master's (``HAClient``) from haMasterAddress,
or from the HA address the name server names in its answer to REGISTER_BROKER."""

from __future__ import annotations

import logging

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.store import BrokerRole, GroupCommitRequest, HAClient, HAService, MessageStore

log = logging.getLogger(__name__)


class Replication:
    """Owns the store's HA service (master) or HA client (slave) for a broker's life.

    ``start``/``shutdown`` block (run them in a thread from an event loop);
    ``follow`` is safe from any thread."""

    def __init__(self, broker_config: BrokerConfig, store: MessageStore) -> None:
        self._broker_config = broker_config
        self._store = store
        self.ha_service: HAService | None = None
        self.ha_client: HAClient | None = None
        if store.config.broker_role is BrokerRole.SLAVE:
            self.ha_client = HAClient(store)
        else:
            self.ha_service = HAService(store, broker_config.bind_address)
        self._ha_port = store.config.ha_listen_port

    def start(self) -> None:
        """Listen (master) or start connecting (slave). A master whose HA port cannot be
        bound logs it and goes on without replication: its sends are unaffected."""
        if self.ha_client is not None:
            self.ha_client.start()
            return
        assert self.ha_service is not None
        if self._broker_config.listen_port == 0:
            # A broker on an ephemeral port (tests, orbitmq.testing) takes one for HA too.
            self._store.config.ha_listen_port = 0
        try:
            self.ha_service.start()
        except OSError as exc:
            log.error(
                "HA port %d cannot be bound (%s): no slave can replicate from this broker",
                self._store.config.ha_listen_port,
                exc,
            )
            self.ha_service = None
            if self._store.config.broker_role is BrokerRole.SYNC_MASTER:
                self._store.group_transfer = _NoSlave()
            return
        self._ha_port = self.ha_service.port
        self._store.on_append = self.ha_service.wakeup
        if self._store.config.broker_role is BrokerRole.SYNC_MASTER:
            self._store.group_transfer = self.ha_service

    @property
    def ha_server_addr(self) -> str:
        """What REGISTER_BROKER names as haServerAddr: brokerIP2:haListenPort."""
        return f"{self._broker_config.ha_host}:{self._ha_port}"

    def follow(self, ha_server_addr: str | None) -> None:
        """The master's HA address as the name server last named it (``MasterAddress``): a
        slave copies from there (unless haMasterAddress is set), as RocketMQ's
        registerBrokerAll tells its HA client."""
        if self.ha_client is not None and ha_server_addr:
            self.ha_client.update_master_address(ha_server_addr)

    def shutdown(self) -> None:
        self._store.on_append = None
        self._store.group_transfer = None
        if self.ha_service is not None:
            self.ha_service.shutdown()
        if self.ha_client is not None:
            self.ha_client.shutdown()


class _NoSlave:
    """A SYNC_MASTER whose HA port could not be bound: no slave can hold anything, so its
    sends are answered SLAVE_NOT_AVAILABLE (stored, not replicated)."""

    def is_slave_ok(self, master_put_where: int) -> bool:
        return False

    def put_request(self, request: GroupCommitRequest) -> None:
        raise AssertionError("no request waits for a slave that cannot connect")

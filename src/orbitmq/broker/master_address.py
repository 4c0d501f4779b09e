"""``MasterAddress``: where a slave finds its master, in one place.

A slave learns its master's remoting address and HA address from the name server's answer to
its REGISTER_BROKER (RocketMQ's RegisterBrokerResult ``masterAddr`` / ``haServerAddr``, set by
``RouteInfoManager.registerBroker`` for a broker id > 0 while the master is registered).
``SlaveSynchronize`` reads ``master_addr`` for the metadata sync; the HA client reads
``ha_server_addr`` (unless ``haMasterAddress`` pins it)."""

from __future__ import annotations

import logging
import threading

from orbitmq.broker.broker_outer_api import RegisterBrokerResult

log = logging.getLogger(__name__)


class MasterAddress:
    """Owns the last known master address and master HA address (None: unknown, or this
    broker is a master). Safe from several threads: a lock guards the pair, so a reader never
    sees one address of an old answer with the other of a new one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._master_addr: str | None = None
        self._ha_server_addr: str | None = None

    @property
    def master_addr(self) -> str | None:
        with self._lock:
            return self._master_addr

    @property
    def ha_server_addr(self) -> str | None:
        with self._lock:
            return self._ha_server_addr

    def set(self, master_addr: str | None, ha_server_addr: str | None) -> None:
        """Record a new answer; a change is logged (RocketMQ logs the new master too)."""
        with self._lock:
            changed = (master_addr, ha_server_addr) != (self._master_addr, self._ha_server_addr)
            self._master_addr, self._ha_server_addr = master_addr, ha_server_addr
        if changed:
            log.info("master address now %s (HA %s)", master_addr, ha_server_addr)

    def on_registered(self, results: list[RegisterBrokerResult]) -> None:
        """``NamesrvRegistrationService``'s callback after each round: the first answer
        wins, as in RocketMQ's registerBrokerAll. A round no name server answered changes
        nothing (the master is not forgotten because a name server was unreachable)."""
        if results:
            self.set(results[0].master_addr, results[0].ha_server_addr)

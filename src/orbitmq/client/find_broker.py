"""Which broker of a group a client talks to (RocketMQ's ``MQClientInstance``
``findBrokerAddressInSubscribe`` and ``findBrokerAddressInAdmin``), over the route's map of a
group's broker ids to addresses.

- Pulls go to the broker id the last answer suggested, else any broker of the group: so a
  queue is read from the slave alone when its master has left the route.
- Offsets (commits and queries) go to the master while the route lists it, else to a slave:
  so a consumer's progress is kept on the slave while the master is down.
- Queue locks (orderly consumption) go to the master only: with no master listed a queue
  cannot be locked, and an orderly consumer pauses on it."""

from __future__ import annotations

from typing import NamedTuple

from orbitmq.protocol.body import MASTER_ID


class FindBrokerResult(NamedTuple):
    """A broker address, whether it is a slave's, and its broker id (0 for the master)."""

    broker_addr: str
    slave: bool
    broker_id: int


def _result(broker_id: int, broker_addr: str) -> FindBrokerResult:
    return FindBrokerResult(broker_addr, broker_id != MASTER_ID, broker_id)


def find_broker_address_in_subscribe(
    broker_addrs: dict[int, str] | None, broker_id: int, only_this_broker: bool
) -> FindBrokerResult | None:
    """RocketMQ's choice among a group's brokers: ``broker_id``; for a slave id that is gone,
    the next id; else (unless ``only_this_broker``) any broker of the group."""
    if not broker_addrs:
        return None
    addr = broker_addrs.get(broker_id)
    if addr is not None:
        return _result(broker_id, addr)
    if broker_id != MASTER_ID and broker_addrs.get(broker_id + 1) is not None:
        return _result(broker_id + 1, broker_addrs[broker_id + 1])
    if only_this_broker:
        return None
    # RocketMQ takes the map's first entry; we take the lowest id, so a master comes first.
    first_id = min(broker_addrs)
    return _result(first_id, broker_addrs[first_id])


def find_broker_address_in_admin(broker_addrs: dict[int, str] | None) -> FindBrokerResult | None:
    """The master if the route lists it, else a slave (the lowest id): where RocketMQ's
    RemoteBrokerOffsetStore commits and queries offsets."""
    if not broker_addrs:
        return None
    if MASTER_ID in broker_addrs:
        return _result(MASTER_ID, broker_addrs[MASTER_ID])
    first_id = min(broker_addrs)
    return _result(first_id, broker_addrs[first_id])

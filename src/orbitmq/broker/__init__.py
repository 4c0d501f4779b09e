"""The broker: processors, managers of persisted metadata and services around the store.
For now: its configuration (broker.conf)."""

from orbitmq.broker.broker_config import BrokerConfig, BrokerStartupConfig, load_broker_config

__all__ = ["BrokerConfig", "BrokerStartupConfig", "load_broker_config"]

"""The name server: the route registry (pure state), its processors, broker expiry and the
wiring that serves them (RocketMQ's ``namesrv`` module)."""

from orbitmq.namesrv.broker_housekeeping_service import BrokerHousekeepingService
from orbitmq.namesrv.broker_registration_processor import BrokerRegistrationProcessor
from orbitmq.namesrv.kv_config_manager import KVConfigManager
from orbitmq.namesrv.kv_config_processor import KVConfigProcessor
from orbitmq.namesrv.namesrv_config import NamesrvConfig, load_namesrv_config
from orbitmq.namesrv.namesrv_controller import NamesrvController
from orbitmq.namesrv.route_info_manager import (
    BROKER_CHANNEL_EXPIRED_TIME_MS,
    BrokerLiveInfo,
    RegisterBrokerResult,
    RouteInfoManager,
)
from orbitmq.namesrv.route_query_processor import TOPIC_NOT_EXIST_REMARK, RouteQueryProcessor

__all__ = [
    "BROKER_CHANNEL_EXPIRED_TIME_MS",
    "TOPIC_NOT_EXIST_REMARK",
    "BrokerHousekeepingService",
    "BrokerLiveInfo",
    "BrokerRegistrationProcessor",
    "KVConfigManager",
    "KVConfigProcessor",
    "NamesrvConfig",
    "NamesrvController",
    "RegisterBrokerResult",
    "RouteInfoManager",
    "RouteQueryProcessor",
    "load_namesrv_config",
]

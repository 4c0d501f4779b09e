"""``BrokerAcl``: what aclEnable=true adds to a broker (RocketMQ's
``BrokerController.initialAcl``): the ``PlainPermissionManager`` over the files under
rocketmqHome, its ``PlainAccessValidator`` hooked into both remoting servers, and the
processor of the ACL admin requests (always registered; without ACL it says ACL is off)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from orbitmq.broker.admin_acl_processor import AdminAclProcessor
from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.plain_access_validator import PlainAccessValidator
from orbitmq.broker.plain_permission_manager import PlainPermissionManager
from orbitmq.common.errors import ConfigError
from orbitmq.remoting import ProcessorTable

log = logging.getLogger(__name__)

#: RocketMQ's environment variable for its installation directory.
ROCKETMQ_HOME_ENV = "ROCKETMQ_HOME"


def acl_home(config: BrokerConfig) -> Path:
    """rocketmqHome from broker.conf, else ROCKETMQ_HOME; ConfigError when neither is set
    (RocketMQ would then load no account and refuse every request)."""
    home = config.rocketmq_home or os.environ.get(ROCKETMQ_HOME_ENV, "")
    if not home:
        raise ConfigError(
            "aclEnable=true needs rocketmqHome (broker.conf) or ROCKETMQ_HOME: the plain ACL "
            "file is <rocketmqHome>/conf/plain_acl.yml"
        )
    return Path(home).expanduser()


class BrokerAcl:
    """Owns the ACL parts of one broker; ``manager`` is None with aclEnable=false. Use from
    the broker's event loop."""

    def __init__(self, config: BrokerConfig, broker_addr: Callable[[], str]) -> None:
        self.manager: PlainPermissionManager | None = None
        if config.acl_enable:
            self.manager = PlainPermissionManager(acl_home(config), config.acl_plain_file)
        self.admin_processor = AdminAclProcessor(
            self.manager, config.broker_name, config.broker_cluster_name, broker_addr
        )

    def install(self, *tables: ProcessorTable) -> None:
        """Check every request of these servers before its processor runs."""
        if self.manager is not None:
            validator = PlainAccessValidator(self.manager)
            for table in tables:
                table.rpc_hooks.append(validator)

    async def start(self) -> None:
        """Load the files (ConfigError: a bad file stops the start) and watch them."""
        if self.manager is not None:
            await asyncio.to_thread(self.manager.load)
            await self.manager.start()

    async def stop(self) -> None:
        if self.manager is not None:
            await self.manager.stop()

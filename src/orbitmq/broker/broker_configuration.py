"""``BrokerConfiguration``: the broker's settings as GET_BROKER_CONFIG (26) shows them and
UPDATE_BROKER_CONFIG (25) changes them (RocketMQ's ``Configuration``).

GET_BROKER_CONFIG answers every ``BrokerConfig`` and ``MessageStoreConfig`` key as Java
properties text (``key=value`` lines, RocketMQ's camelCase names) and the configuration's
DataVersion as JSON. UPDATE_BROKER_CONFIG takes properties text: keys in the black list
(brokerConfigPath, rocketmqHome, configBlackList and those ``configBlackList`` names) refuse
the whole update, as in RocketMQ; a value that does not convert or fails the checks broker.conf
passes at start refuses it too, naming the key. Otherwise each known key is set and written
into the broker's ``-c`` file (the other lines of the file are kept, a copy of the previous
file stays as ``.bak``), so the change survives a restart. Keys that the running broker reads
only when it starts (its identity, ports, paths, file sizes, role) are written to the file and
take effect at the next start; the rest are set at once. Keys no config has are ignored, as
RocketMQ ignores them.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from orbitmq.broker.broker_config import BrokerConfig, check_broker_config
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.config_binding import bind_properties, snake_case
from orbitmq.common.config_file import ConfigFile
from orbitmq.protocol import DEFAULT_BROKER_PORT, DataVersion
from orbitmq.store import MessageStoreConfig

log = logging.getLogger(__name__)

#: Refused whatever ``configBlackList`` says (RocketMQ's AdminBrokerProcessor).
ALWAYS_BLACK_LISTED: Final = frozenset({"brokerConfigPath", "rocketmqHome", "configBlackList"})

#: Keys the running broker reads only at start: an update writes them to the file only.
RESTART_ONLY_KEYS: Final = frozenset(
    {
        "brokerClusterName",
        "brokerName",
        "brokerId",
        "brokerIP1",
        "brokerIP2",
        "bindAddress",
        "listenPort",
        "namesrvAddr",
        "sendThreadPoolQueueCapacity",
        "pullThreadPoolQueueCapacity",
        "queryThreadPoolQueueCapacity",
        "heartbeatThreadPoolQueueCapacity",
        "longPollingEnable",
        "shortPollingTimeMills",
        "registerNameServerPeriod",
        "flushConsumerOffsetInterval",
        "serverChannelMaxIdleTimeSeconds",
        "storePathRootDir",
        "storePathCommitLog",
        "mappedFileSizeCommitLog",
        "mappedFileSizeConsumeQueue",
        "mappedFileSizeTimerLog",
        "flushDiskType",
        "brokerRole",
        "messageDelayLevel",
        "maxOpenConsumeQueueFiles",
        "timerWheelEnable",
        "timerMaxDelaySec",
        "timerPrecisionMs",
        "haListenPort",
        "haMasterAddress",
        # The strategy is chosen at start; the read mode is set at start, and at run time by
        # SET_COMMITLOG_READ_MODE (mqadmin setCommitLogReadAheadMode), as in RocketMQ.
        "usePIDColdCtrStrategy",
        "dataReadAheadEnable",
    }
)

#: Fields whose RocketMQ key is not the plain camelCase of the field's name.
_KEY_OF_FIELD: Final = {
    "broker_ip1": "brokerIP1",
    "broker_ip2": "brokerIP2",
    "check_crc_on_recover": "checkCRCOnRecover",
    "use_pid_cold_ctr_strategy": "usePIDColdCtrStrategy",
}

_LINE_KEY = re.compile(r"\s*((?:\\.|[^=:\s\\])+)")


def config_key(field_name: str) -> str:
    """The broker.conf key of a config field: ``mapped_file_size_commit_log`` is
    ``mappedFileSizeCommitLog``, ``broker_ip1`` is ``brokerIP1``."""
    special = _KEY_OF_FIELD.get(field_name)
    if special is not None:
        return special
    head, *rest = field_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def property_value(value: Any) -> str:
    """A value as Java's String.valueOf writes it in properties text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return value.name
    return str(value)


def config_properties(targets: Iterable[Any]) -> dict[str, str]:
    """Every field of the config dataclasses as broker.conf key -> text; None is left out,
    as RocketMQ leaves out null."""
    properties: dict[str, str] = {}
    for target in targets:
        for f in dataclasses.fields(target):
            value = getattr(target, f.name)
            if value is not None:
                properties[config_key(f.name)] = property_value(value)
    return properties


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def rewrite_properties(text: str, changes: dict[str, str]) -> str:
    """``text`` (a properties file) with each key of ``changes`` set: the line that sets it
    rewritten in place (keeping its spelling), or a line appended; comments, blank lines and
    other keys kept."""
    pending = {snake_case(key): (key, value) for key, value in changes.items()}
    lines = []
    for line in text.splitlines():
        match = _LINE_KEY.match(line)
        if match and line.lstrip()[:1] not in ("#", "!") and snake_case(match[1]) in pending:
            _, value = pending.pop(snake_case(match[1]))
            lines.append(f"{match[1]}={_escape(value)}")
        else:
            lines.append(line)
    lines.extend(f"{key}={_escape(value)}" for key, value in pending.values())
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class ConfigUpdate:
    """What an update did: the keys set now, those that wait for a restart, and those no
    config has (ignored)."""

    applied: tuple[str, ...]
    on_restart: tuple[str, ...]
    ignored: tuple[str, ...]


class BrokerConfiguration:
    """Owns the configuration's DataVersion and the broker's config file; sets fields of the
    live ``BrokerConfig`` and ``MessageStoreConfig``. Updates are serialized by the caller
    (the processor runs one at a time); reads are safe from the broker's event loop."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store_config: MessageStoreConfig,
        config_path: str | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.broker_config = broker_config
        self.store_config = store_config
        self.config_path = Path(config_path) if config_path else None
        self.data_version = DataVersion(timestamp=clock.now_ms())
        self._clock = clock

    def all_configs_text(self) -> str:
        """RocketMQ's getAllConfigsFormatString: ``key=value`` lines."""
        properties = config_properties((self.broker_config, self.store_config))
        return "".join(f"{key}={value}\n" for key, value in properties.items())

    def data_version_json(self) -> str:
        return self.data_version.to_json().decode()

    def black_listed(self, keys: Iterable[str]) -> list[str]:
        """The keys among ``keys`` an update may not change."""
        listed = set(ALWAYS_BLACK_LISTED)
        listed.update(k.strip() for k in self.broker_config.config_black_list.split(";"))
        names = {snake_case(key) for key in listed if key}
        return sorted(key for key in keys if key in listed or snake_case(key) in names)

    def update(self, properties: dict[str, str]) -> ConfigUpdate:
        """Check ``properties`` against copies of the configs, then set them, bump the
        DataVersion and rewrite the config file. Raises ConfigError (naming the key) when a
        value is refused, before anything changed; OSError when the file cannot be written
        (the change is then in effect but not saved)."""
        broker, store = copy.copy(self.broker_config), copy.copy(self.store_config)
        if broker.listen_port == 0:
            # Started on any free port (``--listen-port 0``), which no file may say: check
            # the update as if the file's default port were set.
            broker.listen_port = DEFAULT_BROKER_PORT
        ignored = bind_properties(properties, [broker, store])
        check_broker_config(broker, store)
        known = {key: value for key, value in properties.items() if key not in ignored}
        restart_names = {snake_case(key) for key in RESTART_ONLY_KEYS}
        applied, on_restart = [], []
        for key in known:
            name = snake_case(key)
            if name in restart_names:
                on_restart.append(key)
                continue
            target = self.broker_config if hasattr(broker, name) else self.store_config
            source = broker if target is self.broker_config else store
            setattr(target, name, getattr(source, name))
            applied.append(key)
        self.data_version.next_version(self._clock.now_ms())
        if ignored:
            log.warning("updateBrokerConfig: unknown keys ignored: %s", ", ".join(ignored))
        self._persist(known)
        return ConfigUpdate(tuple(applied), tuple(on_restart), tuple(ignored))

    def _persist(self, changes: dict[str, str]) -> None:
        if not changes:
            return
        if self.config_path is None:
            log.warning(
                "updateBrokerConfig: no config file (-c) to save %s in; the change is lost "
                "at restart",
                ", ".join(changes),
            )
            return
        text = self.config_path.read_text("utf-8") if self.config_path.exists() else ""
        content = rewrite_properties(text, changes)
        ConfigFile(self.config_path).save_bytes(content.encode("utf-8"))
        log.info("updateBrokerConfig: %s saved in %s", ", ".join(changes), self.config_path)

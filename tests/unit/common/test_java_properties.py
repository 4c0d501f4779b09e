"""Java .properties parsing and binding RocketMQ's camelCase keys onto config dataclasses."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pytest

from orbitmq.common.config_binding import bind_properties, config_properties, snake_case
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import format_properties, parse_properties


def test_properties_syntax_as_java_reads_it() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "brokerClusterName = DefaultCluster\n"
        "brokerName:broker-a\n"
        "brokerId 0\n"
        "   namesrvAddr=127.0.0.1:9876;127.0.0.2:9876   \n"
        "storePathRootDir=/data/rocketmq/\\\n"
        "    store\n"
        "deleteWhen=04\n"
        "empty=\n"
        "escaped\\=key=a\\tb\\u0041\n"
        "deleteWhen=05\n"
    )
    assert parse_properties(text) == {
        "brokerClusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "brokerId": "0",
        "namesrvAddr": "127.0.0.1:9876;127.0.0.2:9876   ",
        "storePathRootDir": "/data/rocketmq/store",
        "deleteWhen": "05",
        "empty": "",
        "escaped=key": "a\tbA",
    }


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("mappedFileSizeCommitLog", "mapped_file_size_commit_log"),
        ("brokerIP1", "broker_ip1"),
        ("checkCRCOnRecover", "check_crc_on_recover"),
        ("osPageCacheBusyTimeOutMills", "os_page_cache_busy_time_out_mills"),
        ("flushDiskType", "flush_disk_type"),
    ],
)
def test_snake_case_of_rocketmq_keys(key: str, name: str) -> None:
    assert snake_case(key) == name


class Mode(enum.Enum):
    FAST = "FAST"
    SAFE = "SAFE"


@dataclass
class First:
    port: int = 1
    enabled: bool = False
    name: str = "x"


@dataclass
class Second:
    port: int = 2
    ratio: float = 0.5
    mode: Mode = Mode.FAST
    addr: str | None = None


def test_binding_converts_types_and_reports_unknown_keys() -> None:
    first, second = First(), Second()
    unknown = bind_properties(
        {
            "port": "9",
            "enabled": "TRUE",
            "ratio": "0.9",
            "mode": "safe",
            "addr": "h:1",
            "bogus": "1",
        },
        [first, second],
    )
    assert unknown == ["bogus"]
    assert (first.port, first.enabled, second.port) == (9, True, 2)
    assert (second.ratio, second.mode, second.addr) == (0.9, Mode.SAFE, "h:1")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("port", "ten", r"port: 'ten' is not a valid int"),
        ("enabled", "yes", r"enabled: 'yes' is not a valid bool"),
        ("mode", "TURBO", r"mode: 'TURBO' is not a valid FAST or SAFE"),
        ("ratio", "half", r"ratio: 'half' is not a valid float"),
    ],
)
def test_bad_values_name_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        bind_properties({key: value}, [First(), Second()])


def test_formatted_properties_read_back_exactly() -> None:
    pairs = {
        "storePathRootDir": "C:\\data\\store",
        "key with=odd:chars": " leading space, # and ! inside",
        "multi": "line\none\ttab",
        "empty": "",
    }
    assert parse_properties(format_properties(pairs)) == pairs


def test_config_properties_use_rocketmqs_keys_and_java_texts() -> None:
    class Role(enum.Enum):
        ASYNC_MASTER = 0

    @dataclass
    class Config:
        listen_port: int = 9876
        order_message_enable: bool = False
        broker_role: Role = Role.ASYNC_MASTER
        unit_name: str | None = None
        plugins: list[str] | None = None

    assert config_properties([Config()]) == {
        "listenPort": "9876",
        "orderMessageEnable": "false",
        "brokerRole": "ASYNC_MASTER",
    }

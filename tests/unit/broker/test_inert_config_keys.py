"""The broker.conf keys accepted but not in effect yet: one warning line at start names those
set, and docs/operations.md lists exactly the same keys."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from orbitmq.broker import INERT_BROKER_KEYS, BrokerConfig, load_broker_config, warn_inert_keys
from orbitmq.cli.servers import embedded_config
from orbitmq.common.config_binding import snake_case
from tests.support import REPO_ROOT

OPERATIONS = REPO_ROOT / "docs" / "operations.md"
INERT_HEADING = "### Keys accepted but not in effect yet"
LISTED_KEY = re.compile(r"^- `(\w+)`")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_one_line_names_exactly_the_inert_keys_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName=broker-a\nwaitTimeMillsInPullQueue=3000\naclEnable=true\nlistenPort=20911\n"
    )
    startup = load_broker_config(conf, environ={})
    with caplog.at_level(logging.WARNING):
        found = warn_inert_keys(startup.keys)
    # waitTimeMillsInPullQueue takes effect (brokerFastFailureEnable): not named.
    assert found == ["aclEnable"]
    assert _warnings(caplog) == [
        "broker.conf keys accepted but not in effect yet: aclEnable; see docs/operations.md"
    ]


def test_every_inert_key_is_named_when_all_are_set(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        found = warn_inert_keys([*INERT_BROKER_KEYS, "brokerName"])
    assert found == sorted(INERT_BROKER_KEYS)
    (line,) = _warnings(caplog)
    assert all(key in line for key in INERT_BROKER_KEYS)
    assert "brokerName" not in line


def test_nothing_is_said_when_no_inert_key_is_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-a\nflushDiskType=SYNC_FLUSH\n")
    with caplog.at_level(logging.WARNING):
        assert warn_inert_keys(load_broker_config(conf, environ={}).keys) == []
        assert warn_inert_keys(load_broker_config(None, environ={}).keys) == []
    assert _warnings(caplog) == []


def test_every_inert_key_is_bound_to_a_broker_config_field(tmp_path: Path) -> None:
    """Accepted: each key sets a field (here to its default) rather than being unknown."""
    defaults = BrokerConfig(broker_name="broker-a")
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "".join(
            f"{key}={str(getattr(defaults, snake_case(key))).lower()}\n"
            for key in INERT_BROKER_KEYS
        )
    )
    assert load_broker_config(conf, environ={}).unknown_keys == []


def test_operations_md_lists_exactly_the_inert_keys() -> None:
    lines = OPERATIONS.read_text(encoding="utf-8").splitlines()
    start = lines.index(INERT_HEADING) + 1
    section = []
    for line in lines[start:]:
        if line.startswith("#"):
            break
        section.append(line)
    listed = [m.group(1) for m in map(LISTED_KEY.match, section) if m]
    assert sorted(listed) == sorted(INERT_BROKER_KEYS)


def test_orbitmq_start_warns_once_for_its_broker_conf(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-b\naclEnable=false\n")
    with caplog.at_level(logging.WARNING):
        embedded = embedded_config(str(conf), str(tmp_path / "data"))
    assert embedded.broker.broker_name == "broker-b"  # the file is read once, for both
    assert _warnings(caplog) == [
        "broker.conf keys accepted but not in effect yet: aclEnable; see docs/operations.md"
    ]

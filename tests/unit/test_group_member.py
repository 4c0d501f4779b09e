"""The port scheme and names of `orbitmq start --brokers N` (docs/operations.md): broker i
takes broker-a's ports plus 10 i; any-free-port and off stay as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.cli.broker_group import GroupOptions, plan_group
from orbitmq.cli.group_member import broker_name, member_config
from orbitmq.common.errors import ConfigError


def test_names_follow_rocketmq_broker_a_b_c() -> None:
    assert [broker_name(i) for i in (0, 1, 2, 25, 26, 27, 63)] == [
        "broker-a",
        "broker-b",
        "broker-c",
        "broker-z",
        "broker-aa",
        "broker-ab",
        "broker-bl",
    ]


def test_each_broker_takes_broker_a_ports_plus_ten(tmp_path: Path) -> None:
    ports = []
    for index in range(3):
        member = member_config(None, str(tmp_path), index)
        broker, store = member.broker, member.store
        assert broker.broker_name == broker_name(index)
        assert store.store_path_root_dir == str(tmp_path.resolve() / broker_name(index))
        assert broker.console_port == -1  # the group's console is the parent's
        ports.append(
            (
                broker.listen_port,
                store.ha_listen_port,
                broker.grpc_server_port,
                broker.metrics_prom_exporter_port,
            )
        )
    assert ports == [
        (10911, 10912, 8081, 5557),
        (10921, 10922, 8091, 5567),
        (10931, 10932, 8101, 5577),
    ]
    every = [p for four in ports for p in four] + [p - 2 for p, *_ in ports]  # VIP: listen - 2
    assert len(set(every)) == len(every)


def test_file_ports_shift_and_free_or_off_ports_stay(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("listenPort=20911\nhaListenPort=30000\ngrpcServerPort=-1\n")
    member = member_config(str(conf), str(tmp_path), 2, metrics_port=0)
    assert member.broker.listen_port == 20931
    assert member.store.ha_listen_port == 30020
    assert member.broker.grpc_server_port == -1
    assert member.broker.metrics_prom_exporter_port == 0
    member = member_config(None, str(tmp_path), 1, listen_port=0)
    assert member.broker.listen_port == 0
    assert member.broker.grpc_server_port == 0


def test_what_cannot_work_with_several_brokers_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="listenPort: 65530 \\+ 10 is not a port"):
        member_config(None, str(tmp_path), 1, listen_port=65530)
    conf = tmp_path / "shared.conf"
    conf.write_text(f"storePathCommitLog={tmp_path / 'cl'}\n")
    with pytest.raises(ConfigError, match="storePathCommitLog"):
        member_config(str(conf), str(tmp_path), 0)
    (tmp_path / "single" / "commitlog").mkdir(parents=True)
    with pytest.raises(ConfigError, match="holds one broker's store"):
        plan_group(GroupOptions(None, str(tmp_path / "single"), 2))

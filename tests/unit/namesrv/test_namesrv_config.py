"""Where the name server keeps its settings: a -c file is also where UPDATE_NAMESRV_CONFIG
writes them (RocketMQ's NamesrvStartup sets configStorePath to it)."""

from __future__ import annotations

from pathlib import Path

from orbitmq.namesrv import NamesrvConfig, load_namesrv_config


def test_a_config_file_becomes_the_store_path(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text("listenPort=19876\norderMessageEnable=true\n")

    config = load_namesrv_config(conf)

    assert config.config_store_path == str(conf)
    assert (config.listen_port, config.order_message_enable) == (19876, True)


def test_without_a_file_the_store_path_is_rocketmqs_default() -> None:
    config = NamesrvConfig()
    assert config.config_store_path == str(Path.home() / "namesrv" / "namesrv.properties")
    assert config.config_black_list == "configBlackList;configStorePath;kvConfigPath"

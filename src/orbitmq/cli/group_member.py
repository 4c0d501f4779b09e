"""One broker of ``orbitmq start --brokers N``: its settings (name, ports, data directory) and
the hidden ``orbitmq group-broker`` command that runs it in its own process.

The port scheme: broker number ``i`` (broker-a is 0, broker-b 1, ...) takes every port
broker-a would take plus ``PORT_STRIDE * i`` (10): listenPort 10911, 10921, ...; with them
the VIP channel (listenPort - 2) and the HA port (listenPort + 1, or haListenPort + 10 i when
broker.conf sets it), grpcServerPort 8081, 8091, ... and metricsPromExporterPort 5557, 5567,
... A stride of 1 cannot work: each broker holds listenPort - 2 .. listenPort + 1. A port of
0 (any free port) stays 0 for every broker; -1 (off) stays off.

The member stops as ``orbitmq broker`` does on SIGTERM or SIGINT, and also when its standard
input reaches its end: that pipe is held by the ``orbitmq start`` process that spawned it, so
a parent killed with -9 leaves no broker behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

import click

from orbitmq.broker import BrokerController
from orbitmq.cli.console import fail, say
from orbitmq.cli.grpc_starter import start_grpc
from orbitmq.cli.log_level import log_level_option
from orbitmq.cli.servers import EmbeddedConfig, embedded_config, serve_until_signal
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import parse_properties

#: What each broker adds to the ports of the one before it (see the module docstring).
PORT_STRIDE: Final = 10
#: The most brokers one ``orbitmq start`` runs (more than the cores of most hosts).
MAX_BROKERS: Final = 64
#: The member's ready line, read by its parent: this prefix and a JSON object.
MEMBER_READY: Final = "OrbitMQ group broker ready: "


def broker_name(index: int) -> str:
    """RocketMQ's naming: broker-a .. broker-z, then broker-aa, broker-ab, ..."""
    letters = ""
    number = index + 1
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return f"broker-{letters}"


def _shifted(port: int, offset: int, what: str) -> int:
    """``port`` + ``offset``; 0 (any free port) and -1 (off) as they are."""
    if port <= 0:
        return port
    if port + offset > 65535:
        raise ConfigError(
            f"{what}: {port} + {offset} is not a port (broker {offset // PORT_STRIDE + 1} of "
            f"--brokers takes its ports {PORT_STRIDE} above the one before it)"
        )
    return port + offset


def member_config(
    config_path: str | None,
    data_dir: str | None,
    index: int,
    listen_port: int | None = None,
    bind: str | None = None,
    metrics_port: int | None = None,
    grpc_port: int | None = None,
) -> EmbeddedConfig:
    """Broker number ``index``'s settings: ``orbitmq start``'s (the embedded defaults under
    broker.conf under the options), named ``broker_name(index)``, its store in
    ``<data dir>/<name>``, its ports shifted by ``PORT_STRIDE * index``, no console (the
    group's is in the parent). ConfigError for what cannot work with several brokers."""
    embedded = embedded_config(
        config_path, data_dir, None, listen_port, bind, metrics_port, -1, grpc_port
    )
    keys: frozenset[str] = frozenset()
    if config_path is not None:
        keys = frozenset(parse_properties(Path(config_path).read_text(encoding="utf-8")))
    broker, store = embedded.broker, embedded.store
    if store.store_path_commit_log:
        raise ConfigError(
            f"storePathCommitLog: {store.store_path_commit_log} would be one commit log for "
            "every broker of --brokers; remove the key (each keeps its own under --data-dir)"
        )
    offset = PORT_STRIDE * index
    name = broker_name(index)
    root = Path(store.store_path_root_dir)
    broker.broker_name = name
    store.store_path_root_dir = str(root / name)
    broker.listen_port = _shifted(broker.listen_port, offset, "listenPort")
    if "haListenPort" in keys:
        store.ha_listen_port = _shifted(store.ha_listen_port, offset, "haListenPort")
    elif broker.listen_port:
        store.ha_listen_port = broker.listen_port + 1
    broker.metrics_prom_exporter_port = _shifted(
        broker.metrics_prom_exporter_port, offset, "metricsPromExporterPort"
    )
    broker.grpc_server_port = _shifted(broker.grpc_server_port, offset, "grpcServerPort")
    return embedded


class _BrokerNameFilter(logging.Filter):
    """Puts the broker's name before each record's logger name: the group's brokers share
    one stderr."""

    def __init__(self, broker: str) -> None:
        super().__init__()
        self._broker = broker

    def filter(self, record: logging.LogRecord) -> bool:
        record.name = f"{self._broker} {record.name}"
        return True


def _name_logs(broker: str) -> None:
    for handler in logging.getLogger().handlers:
        handler.addFilter(_BrokerNameFilter(broker))


def _stop_when_stdin_ends() -> None:
    """SIGTERM to this process (a clean stop) once standard input reaches its end: the
    parent that holds the pipe is gone, and its stdout goes nowhere from then on."""
    loop = asyncio.get_running_loop()

    def readable() -> None:
        try:
            data = os.read(0, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(0)
            # Nobody reads the stdout pipe either now: a write to it would raise
            # BrokenPipeError in the middle of the stop ("OrbitMQ stopping ...").
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
            os.kill(os.getpid(), signal.SIGTERM)

    loop.add_reader(0, readable)


@click.command(name="group-broker", hidden=True)
@click.option("-c", "--config", "config_path", type=click.Path())
@click.option("--data-dir", required=True, type=click.Path(file_okay=False))
@click.option("--index", type=click.IntRange(0, MAX_BROKERS - 1), required=True)
@click.option("--namesrv-addr", required=True)
@click.option("--listen-port", type=int)
@click.option("--bind")
@click.option("--metrics-port", type=int)
@click.option("--grpc-port", type=int)
@log_level_option()
def group_broker(
    config_path: str | None,
    data_dir: str,
    index: int,
    namesrv_addr: str,
    listen_port: int | None,
    bind: str | None,
    metrics_port: int | None,
    grpc_port: int | None,
) -> None:
    """One broker of `orbitmq start --brokers N` (started by it, not by hand)."""
    try:
        member = member_config(
            config_path, data_dir, index, listen_port, bind, metrics_port, grpc_port
        )
    except (ConfigError, OSError) as exc:
        fail(str(exc))
    broker_config = member.broker
    broker_config.namesrv_addr = member.namesrv_addr or namesrv_addr
    _name_logs(broker_config.broker_name)

    async def start() -> Callable[[], Awaitable[None]]:
        # No config path: UPDATE_BROKER_CONFIG would otherwise write one broker's values
        # into the broker.conf every broker of the group reads.
        controller = BrokerController(broker_config, member.store, tls=member.tls)
        await controller.start()
        try:
            grpc_text, stop_grpc = await start_grpc(controller)
        except BaseException:
            await controller.stop()
            raise
        _stop_when_stdin_ends()
        exporter = controller.metrics_manager.exporter
        ready = {
            "name": broker_config.broker_name,
            "cluster": broker_config.broker_cluster_name,
            "address": controller.address,
            "fast_port": controller.fast_port,
            "grpc": grpc_text.removeprefix("gRPC "),
            "metrics": exporter.url if exporter is not None else None,
            "data": member.store.store_path_root_dir,
            "pid": os.getpid(),
        }
        say(MEMBER_READY + json.dumps(ready))

        async def stop() -> None:
            with contextlib.suppress(ValueError, NotImplementedError):
                asyncio.get_running_loop().remove_reader(0)
            try:
                await stop_grpc()
            finally:
                await controller.stop()

        return stop

    serve_until_signal(start)

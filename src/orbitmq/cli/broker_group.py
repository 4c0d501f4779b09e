"""``orbitmq start --brokers N`` (N > 1): a name server and N brokers on one host, each broker
its own OS process (a Python process uses one core), all in one brokerClusterName; RocketMQ's
answer to a big machine is several broker groups per host.

This process runs the name server and the console and holds ``--data-dir``'s lock (so
``orbitmq stop --data-dir`` finds it); each broker is ``orbitmq group-broker`` in its own
session (a terminal's Ctrl-C reaches only this process, which stops the brokers in order)
with its store in ``<data dir>/broker-a``, ``broker-b``, ... and its ports as
``group_member`` describes. Topics created cluster-wide (mqadmin updateTopic -c, the
console, a send to a new topic through TBW102, which every broker registers) get queues on
every broker.

A broker that exits while the group runs is reported and the whole command stops the others
and exits 1, rather than restarting it: the cause (a full disk, a corrupt store, a port taken)
usually outlives a restart, and a half-served cluster that no one notices is worse than a
stopped one; a supervisor (systemd ``Restart=on-failure``, Kubernetes) restarts the command
with its own back-off and logs, and each broker's store recovers on the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from orbitmq.cli.console import err, fail, say, warn
from orbitmq.cli.group_member import MEMBER_READY, broker_name, member_config
from orbitmq.cli.servers import (
    EmbeddedConfig,
    _console_of,
    _listening_on,
    _warn_if_exposed,
    embedded_config,
)
from orbitmq.cli.web_console import ConsoleStarter
from orbitmq.common.errors import ConfigError
from orbitmq.namesrv import NamesrvController
from orbitmq.remoting import run
from orbitmq.store import StoreError, StoreLock

#: How long a broker may take to stop after SIGTERM before it is killed (its store recovers).
MEMBER_STOP_TIMEOUT_S: Final = 120.0


@dataclass(frozen=True, slots=True)
class GroupOptions:
    """``orbitmq start``'s options, as given (None: not given)."""

    config_path: str | None
    data_dir: str | None
    brokers: int
    namesrv_port: int | None = None
    listen_port: int | None = None
    bind: str | None = None
    metrics_port: int | None = None
    console_port: int | None = None
    grpc_port: int | None = None

    def member_args(self, index: int, namesrv_addr: str) -> list[str]:
        """``orbitmq group-broker``'s arguments for broker number ``index``."""
        args = ["--index", str(index), "--namesrv-addr", namesrv_addr]
        for flag, value in (
            ("-c", self.config_path),
            ("--listen-port", self.listen_port),
            ("--bind", self.bind),
            ("--metrics-port", self.metrics_port),
            ("--grpc-port", self.grpc_port),
        ):
            if value is not None:
                args += [flag, str(value)]
        return args


@dataclass(slots=True)
class Member:
    """One broker process and what its parent learned of it. Owned by the parent's loop."""

    name: str
    process: asyncio.subprocess.Process
    ready: asyncio.Future[dict[str, Any]]
    relay: asyncio.Task[None] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def exit_text(self) -> str:
        code = self.process.returncode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"was killed by signal {-code} ({signal.Signals(-code).name})"
        return f"exited with code {code}"


def plan_group(options: GroupOptions) -> EmbeddedConfig:
    """The name server's and console's settings; every broker's checked too (ConfigError
    names what cannot work: a port past 65535, a shared commit log)."""
    embedded = embedded_config(
        options.config_path,
        options.data_dir,
        options.namesrv_port,
        options.listen_port,
        options.bind,
        options.metrics_port,
        options.console_port,
        options.grpc_port,
    )
    for index in range(options.brokers):
        member_config(
            options.config_path,
            embedded.store.store_path_root_dir,
            index,
            options.listen_port,
            options.bind,
            options.metrics_port,
            options.grpc_port,
        )
    root = Path(embedded.store.store_path_root_dir)
    if (root / "commitlog").is_dir():
        raise ConfigError(
            f"{root} holds one broker's store (orbitmq start without --brokers); give "
            "--brokers another --data-dir, or start it without --brokers"
        )
    return embedded


def _unserved(root: Path, brokers: int) -> list[str]:
    """Stores of brokers past the N started (the group ran with more before)."""
    served = {broker_name(i) for i in range(brokers)}
    return sorted(
        p.name for p in root.glob("broker-*") if p.name not in served and (p / "commitlog").is_dir()
    )


async def _relay(member: Member, stdout: asyncio.StreamReader) -> None:
    """The member's stdout: its ready line resolves ``member.ready``, the rest is shown."""
    while line := await stdout.readline():
        text = line.decode(errors="replace").rstrip()
        if text.startswith(MEMBER_READY) and not member.ready.done():
            member.ready.set_result(json.loads(text.removeprefix(MEMBER_READY)))
        elif text:
            say(f"[{member.name}] {text}")
    if not member.ready.done():
        member.ready.set_exception(EOFError(member.name))


async def _spawn(options: GroupOptions, index: int, namesrv_addr: str, root: str) -> Member:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "orbitmq.cli",
        "--log-level",
        logging.getLevelName(logging.getLogger().getEffectiveLevel()),
        "group-broker",
        *options.member_args(index, namesrv_addr),
        "--data-dir",
        root,
        stdin=asyncio.subprocess.PIPE,  # held until this process ends: see group_member
        stdout=asyncio.subprocess.PIPE,
        # stderr is this process's: the broker's errors and logs reach the operator as is.
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    member = Member(broker_name(index), process, asyncio.get_running_loop().create_future())
    assert process.stdout is not None
    member.relay = asyncio.create_task(_relay(member, process.stdout))
    return member


async def _await_ready(members: list[Member], stopping: asyncio.Event) -> bool:
    """Every member's ready line; False when a stop was asked first. ConfigError naming the
    member that exited before it was ready."""
    stop_task = asyncio.ensure_future(stopping.wait())
    try:
        for member in members:
            exited = asyncio.ensure_future(member.process.wait())
            waits: set[asyncio.Future[Any]] = {member.ready, exited, stop_task}
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if member.ready in done and member.ready.exception() is None:
                member.info = member.ready.result()
                exited.cancel()
                continue
            exited.cancel()
            if stop_task in done:
                return False
            await member.process.wait()
            raise ConfigError(
                f"{member.name} {member.exit_text()} before it was ready (its error is above); "
                "the other brokers were stopped"
            )
        return True
    finally:
        stop_task.cancel()


async def _stop_members(members: list[Member]) -> None:
    """SIGTERM to each running member, then wait for all (SIGKILL past the timeout)."""
    for member in members:
        if member.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                member.process.send_signal(signal.SIGTERM)

    async def wait_one(member: Member) -> None:
        try:
            await asyncio.wait_for(member.process.wait(), MEMBER_STOP_TIMEOUT_S)
        except TimeoutError:
            warn(f"{member.name} still runs {MEMBER_STOP_TIMEOUT_S:g} s after SIGTERM: killed")
            with contextlib.suppress(ProcessLookupError):
                member.process.kill()
            await member.process.wait()
        if member.relay is not None:
            await member.relay
        if member.ready.done():
            member.ready.exception()  # a member that never got ready: already reported

    await asyncio.gather(*(wait_one(m) for m in members))


def _ready_line(
    embedded: EmbeddedConfig, namesrv: NamesrvController, members: list[Member], beside: str
) -> str:
    brokers = ", ".join(
        f"{m.info['address']} ({m.info['cluster']}/{m.info['name']})" for m in members
    )
    grpc = [str(m.info["grpc"]) for m in members]
    grpc_text = grpc[0] if len(set(grpc)) == 1 and grpc[0].startswith("off") else " ".join(grpc)
    return (
        f"OrbitMQ ready: name server {namesrv.address}, brokers {brokers}, "
        f"listening on {_listening_on(embedded.broker.bind_address)}, "
        f"data in {embedded.store.store_path_root_dir}, {beside}, gRPC {grpc_text}"
    )


def _say_metrics(namesrv: NamesrvController, members: list[Member]) -> None:
    urls = [f"{m.name} {m.info['metrics']}" for m in members if m.info.get("metrics")]
    if namesrv.metrics.exporter is not None:
        urls.append(f"name server {namesrv.metrics.exporter.url}")
    if urls:
        say(f"Prometheus metrics: {', '.join(urls)}")


async def _first_exit(members: list[Member], stopping: asyncio.Event) -> Member | None:
    """The first member to exit, or None when a stop is asked first."""
    waits = {asyncio.ensure_future(m.process.wait()): m for m in members}
    stop_task = asyncio.ensure_future(stopping.wait())
    try:
        done, _ = await asyncio.wait({*waits, stop_task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (*waits, stop_task):
            task.cancel()
    exited = [waits[t] for t in done if t in waits]
    return exited[0] if exited else None


async def _serve_group(
    options: GroupOptions, embedded: EmbeddedConfig, console: ConsoleStarter | None
) -> int:
    """Run the group until SIGTERM / SIGINT (0) or a broker's exit (1)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    root = embedded.store.store_path_root_dir
    lock = StoreLock(root)
    lock.acquire()
    namesrv = NamesrvController(embedded.namesrv, tls=embedded.tls)
    members: list[Member] = []
    stop_beside: Callable[[], Awaitable[None]] = _nothing
    try:
        await namesrv.remoting_server.bind()
        await namesrv.start()
        namesrv_addr = embedded.namesrv_addr or namesrv.address
        for name in _unserved(Path(root), options.brokers):
            warn(
                f"{name}'s store in {root} is not served (started with --brokers {options.brokers})"
            )
        for index in range(options.brokers):
            members.append(await _spawn(options, index, namesrv_addr, root))
        if not await _await_ready(members, stopping):
            return 0
        beside, stop_beside = await _start_console(console, namesrv_addr)
        _warn_if_exposed(embedded.broker.bind_address, "the name server's and brokers' ports")
        say(_ready_line(embedded, namesrv, members, beside))
        _say_metrics(namesrv, members)
        dead = await _first_exit(members, stopping)
        if dead is None:
            return 0
        err.print(
            f"orbitmq: error: {dead.name} (pid {dead.process.pid}) {dead.exit_text()}: "
            "stopping the other brokers",
            markup=False,
        )
        return 1
    finally:
        say("OrbitMQ stopping ...")
        try:
            await _stop_members(members)
            await stop_beside()
        finally:
            await namesrv.stop()
            lock.release()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        say("OrbitMQ stopped.")


async def _nothing() -> None:
    return None


async def _start_console(
    console: ConsoleStarter | None, namesrv_addr: str
) -> tuple[str, Callable[[], Awaitable[None]]]:
    if console is None:
        return "console off", _nothing
    return await console(namesrv_addr)


def run_group(options: GroupOptions) -> None:
    """``orbitmq start --brokers N`` to its end; exits 1 when a broker died or could not
    start (one line on stderr saying which)."""
    try:
        embedded = plan_group(options)
        console = _console_of(embedded.broker, embedded.tls)
    except (ConfigError, OSError) as exc:
        fail(str(exc))
    try:
        code = run(_serve_group(options, embedded, console))
    except (ConfigError, StoreError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(str(exc) or repr(exc))
    if code:
        sys.exit(code)

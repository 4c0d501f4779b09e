"""mqadmin's name server commands: getNamesrvConfig, updateNamesrvConfig, wipeWritePerm,
addWritePerm, updateKvConfig, deleteKvConfig. Each reaches every name server of ``-n``."""

from __future__ import annotations

import click

from orbitmq.cli.admin.broker import print_per_server
from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.session import Session, session_options
from orbitmq.client import AdminClient

COMMANDS = CommandRegistry("Name server")


@COMMANDS.command("getNamesrvConfig")
@session_options
def get_namesrv_config(session: Session) -> None:
    """Every setting of each name server."""
    print_per_server(session, session.admin(lambda admin: admin.namesrv_config()))


@COMMANDS.command("updateNamesrvConfig")
@click.option("-k", "--key", required=True, help="Config key (RocketMQ's name).")
@click.option("-v", "--value", required=True, help="Its new value.")
@session_options
def update_namesrv_config(session: Session, key: str, value: str) -> None:
    """Change a setting of every name server, which saves it to its config file."""

    async def update(admin: AdminClient) -> dict[str, str]:
        await admin.update_namesrv_config({key: value})
        return {
            addr: config.get(key, "") for addr, config in (await admin.namesrv_config()).items()
        }

    now = session.admin(update)
    session.out.table(("namesrvAddr", "key", "value"), [(a, key, v) for a, v in now.items()])


def _perm_rows(changed: dict[str, int], broker: str) -> list[tuple[str, str, int]]:
    return [(addr, broker, count) for addr, count in changed.items()]


@COMMANDS.command("wipeWritePerm")
@click.option("-b", "--brokerName", "broker", required=True, help="Broker name.")
@session_options
def wipe_write_perm(session: Session, broker: str) -> None:
    """Stop writes to a broker's topics in the name servers' routes (before taking it down);
    how many topics changed on each name server."""
    changed = session.admin(lambda admin: admin.wipe_write_perm(broker))
    session.out.table(("namesrvAddr", "brokerName", "topicsChanged"), _perm_rows(changed, broker))


@COMMANDS.command("addWritePerm")
@click.option("-b", "--brokerName", "broker", required=True, help="Broker name.")
@session_options
def add_write_perm(session: Session, broker: str) -> None:
    """Allow writes to a broker's topics again; how many topics changed on each name
    server."""
    changed = session.admin(lambda admin: admin.add_write_perm(broker))
    session.out.table(("namesrvAddr", "brokerName", "topicsChanged"), _perm_rows(changed, broker))


@COMMANDS.command("updateKvConfig")
@click.option("-s", "--namespace", required=True, help="Namespace, e.g. ORDER_TOPIC_CONFIG.")
@click.option("-k", "--key", required=True, help="Key.")
@click.option("-v", "--value", required=True, help="Value.")
@session_options
def update_kv_config(session: Session, namespace: str, key: str, value: str) -> None:
    """Set a KV config entry on every name server (kept in its kvConfig.json)."""
    session.admin(lambda admin: admin.put_kv_config(namespace, key, value))
    session.out.record({"namespace": namespace, "key": key, "value": value, "updated": True})


@COMMANDS.command("deleteKvConfig")
@click.option("-s", "--namespace", required=True, help="Namespace.")
@click.option("-k", "--key", required=True, help="Key.")
@session_options
def delete_kv_config(session: Session, namespace: str, key: str) -> None:
    """Remove a KV config entry from every name server."""
    session.admin(lambda admin: admin.delete_kv_config(namespace, key))
    session.out.record({"namespace": namespace, "key": key, "deleted": True})

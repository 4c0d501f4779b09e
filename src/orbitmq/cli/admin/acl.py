"""mqadmin's plain ACL commands (RocketMQ 4.9): updateAclConfig, deleteAclConfig,
updateGlobalWhiteAddr, clusterAclConfigVersion, with their short options; each acts on one
broker (``-b``) or on every broker of a cluster (``-c``)."""

from __future__ import annotations

import click

from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.console import fail
from orbitmq.cli.session import Session, session_options
from orbitmq.client import PlainAccessConfig

COMMANDS = CommandRegistry("ACL")

_BROKER = click.option("-b", "--brokerAddr", "broker_addr", help="One broker (host:port).")
_CLUSTER = click.option("-c", "--clusterName", "cluster", help="Every broker of a cluster.")


def _target(broker_addr: str | None, cluster: str | None) -> None:
    if (broker_addr is None) == (cluster is None):
        fail("give exactly one of -b/--brokerAddr and -c/--clusterName")


def _items(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(i.strip() for i in text.split(",") if i.strip())


# -a/-s name the account edited (``account``, ``account_secret``): ``access_key`` and
# ``secret_key`` are every command's own signing credentials (session_options).
@COMMANDS.command("updateAclConfig")
@_BROKER
@_CLUSTER
@click.option("-a", "--accessKey", "account", required=True, help="Longer than 6 characters.")
@click.option(
    "-s", "--secretKey", "account_secret", required=True, help="Longer than 6 characters."
)
@click.option("-w", "--whiteRemoteAddress", "white", help="Admitted without a signature.")
@click.option("-i", "--defaultTopicPerm", "default_topic_perm", help="DENY, PUB, SUB, PUB|SUB.")
@click.option("-u", "--defaultGroupPerm", "default_group_perm", help="DENY, PUB, SUB, PUB|SUB.")
@click.option("-t", "--topicPerms", "topic_perms", help="e.g. topicA=DENY,topicD=SUB")
@click.option("-g", "--groupPerms", "group_perms", help="e.g. groupA=DENY,groupD=SUB")
@click.option("-m", "--admin", "admin", type=bool, default=False, help="true: an admin account.")
@session_options
def update_acl_config(
    session: Session,
    broker_addr: str | None,
    cluster: str | None,
    account: str,
    account_secret: str,
    white: str | None,
    default_topic_perm: str | None,
    default_group_perm: str | None,
    topic_perms: str | None,
    group_perms: str | None,
    admin: bool,
) -> None:
    """Add an account to the brokers' plain_acl.yml, or update its fields."""
    _target(broker_addr, cluster)
    config = PlainAccessConfig(
        account,
        account_secret,
        white,
        admin,
        default_topic_perm,
        default_group_perm,
        _items(topic_perms),
        _items(group_perms),
    )
    addrs = session.admin(
        lambda a: a.update_acl_config(config, cluster=cluster, broker_addr=broker_addr)
    )
    session.out.table(("brokerAddr", "accessKey"), [(addr, account) for addr in addrs])


@COMMANDS.command("deleteAclConfig")
@_BROKER
@_CLUSTER
@click.option("-a", "--accessKey", "account", required=True, help="The account to delete.")
@session_options
def delete_acl_config(
    session: Session, broker_addr: str | None, cluster: str | None, account: str
) -> None:
    """Delete an account from the ACL file that holds it."""
    _target(broker_addr, cluster)
    addrs = session.admin(
        lambda a: a.delete_acl_config(account, cluster=cluster, broker_addr=broker_addr)
    )
    session.out.table(("brokerAddr", "accessKey"), [(addr, account) for addr in addrs])


@COMMANDS.command("updateGlobalWhiteAddr")
@_BROKER
@_CLUSTER
@click.option(
    "-g",
    "--globalWhiteRemoteAddresses",
    "addresses",
    required=True,
    help="e.g. 10.10.103.*,192.168.0.*",
)
@click.option("-p", "--aclFileFullPath", "acl_file", help="Default: conf/plain_acl.yml.")
@session_options
def update_global_white_addr(
    session: Session,
    broker_addr: str | None,
    cluster: str | None,
    addresses: str,
    acl_file: str | None,
) -> None:
    """Replace the addresses admitted without any account (globalWhiteRemoteAddresses)."""
    _target(broker_addr, cluster)
    listed = list(_items(addresses) or ())
    addrs = session.admin(
        lambda a: a.update_global_white_addrs(
            listed, acl_file=acl_file, cluster=cluster, broker_addr=broker_addr
        )
    )
    session.out.table(("brokerAddr", "globalWhiteAddrs"), [(a, addresses) for a in addrs])


@COMMANDS.command("clusterAclConfigVersion")
@_BROKER
@_CLUSTER
@session_options
def cluster_acl_config_version(
    session: Session, broker_addr: str | None, cluster: str | None
) -> None:
    """The data version of each broker's ACL files."""
    _target(broker_addr, cluster)
    infos = session.admin(
        lambda a: a.cluster_acl_config_version(cluster=cluster, broker_addr=broker_addr)
    )
    rows = [
        (i.cluster_name, i.broker_name, i.broker_addr, i.version, i.all_acl_file_version)
        for i in infos
    ]
    columns = ("clusterName", "brokerName", "brokerAddr", "version", "allAclFileVersion")
    session.out.table(columns, rows)

"""One plain ACL file (``plain_acl.yml`` and ``conf/acl/*.yml``) in RocketMQ 4.9.8's format:
reading it into accounts, and the edits the ACL admin requests make to it.

The format (YAML)::

    globalWhiteRemoteAddresses: [10.10.103.*, 192.168.0.*]
    accounts:
      - accessKey: RocketMQ            # longer than 6 characters
        secretKey: 12345678            # longer than 6 characters
        whiteRemoteAddress: 192.168.0.*   # admitted without a signature
        admin: false
        defaultTopicPerm: DENY         # DENY, PUB, SUB or PUB|SUB; absent: DENY
        defaultGroupPerm: SUB
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=DENY, groupB=PUB|SUB]
    dataVersion: [{counter: 1, timestamp: 1700000000000}]

Edits rewrite the whole file (RocketMQ's ``AclUtils.writeDataObject``) with the next data
version (counter + 1, timestamp now). Functions, no state: the caller serialises edits.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from orbitmq.broker.plain_access_resource import (
    PlainAccessResource,
    is_valid_perm,
    parse_perm,
)
from orbitmq.broker.remote_address_strategy import RemoteAddressStrategy, remote_address_strategy
from orbitmq.common.errors import ConfigError
from orbitmq.common.topic import retry_topic

GLOBAL_WHITE_ADDRS: Final = "globalWhiteRemoteAddresses"
ACCOUNTS: Final = "accounts"
DATA_VERSION: Final = "dataVersion"
#: ``AclConstants.ACCESS_KEY_MIN_LENGTH`` / ``SECRET_KEY_MIN_LENGTH``: keys must be longer.
KEY_MIN_LENGTH: Final = 6
#: The account fields, as the file and the admin requests name them.
ACCOUNT_FIELDS: Final = (
    "accessKey",
    "secretKey",
    "whiteRemoteAddress",
    "admin",
    "defaultTopicPerm",
    "defaultGroupPerm",
    "topicPerms",
    "groupPerms",
)


def read_acl_file(path: Path) -> dict[str, Any]:
    """The file's top-level mapping; {} for a missing or empty file. ConfigError names a file
    that is not YAML or not a mapping."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"plain ACL file {path} is not YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"plain ACL file {path} is not a mapping of keys to values")
    return data


def _strings(value: object, what: str, path: Path) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"plain ACL file {path}: {what} is not a list")
    return [str(item) for item in value if item is not None]


def global_white_strategies(data: Mapping[str, Any], path: Path) -> list[RemoteAddressStrategy]:
    return [
        remote_address_strategy(one)
        for one in _strings(data.get(GLOBAL_WHITE_ADDRS), GLOBAL_WHITE_ADDRS, path)
    ]


def check_keys(access_key: object, secret_key: object) -> None:
    """``checkPlainAccessConfig``: both keys present and longer than 6 characters."""
    if (
        not isinstance(access_key, str)
        or not isinstance(secret_key, str)
        or len(access_key) <= KEY_MIN_LENGTH
        or len(secret_key) <= KEY_MIN_LENGTH
    ):
        raise ConfigError(
            f"The accessKey={access_key} and secretKey={secret_key} cannot be null and "
            "length should longer than 6"
        )


def build_account(
    account: Mapping[str, Any], path: Path
) -> tuple[PlainAccessResource, RemoteAddressStrategy]:
    """One account's rights (``buildPlainAccessResource``) and its white address strategy."""
    # YAML reads an unquoted `secretKey: 12345678` (RocketMQ's own example) as a number.
    access_key = _optional_text(account.get("accessKey"))
    secret_key = _optional_text(account.get("secretKey"))
    check_keys(access_key, secret_key)
    assert isinstance(access_key, str) and isinstance(secret_key, str)
    white = account.get("whiteRemoteAddress")
    admin = account.get("admin", False)
    owned = PlainAccessResource(
        access_key=access_key,
        secret_key=secret_key,
        white_remote_address=None if white is None else str(white),
        admin=admin is True or str(admin).lower() == "true",
        default_topic_perm=parse_perm(_optional_text(account.get("defaultTopicPerm"))),
        default_group_perm=parse_perm(_optional_text(account.get("defaultGroupPerm"))),
    )
    for key, is_topic in (("groupPerms", False), ("topicPerms", True)):
        for item in _strings(account.get(key), key, path):
            name, sep, perm = item.partition("=")
            if not sep or not name.strip() or "=" in perm:
                kind = "topic" if is_topic else "group"
                raise ConfigError(f"Parse resource permission failed for {kind}:{item}")
            resource = name.strip() if is_topic else retry_topic(name.strip())
            owned.resource_perms[resource] = parse_perm(perm)
    return owned, remote_address_strategy(owned.white_remote_address)


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def data_version(data: Mapping[str, Any]) -> dict[str, int]:
    """The file's first dataVersion entry, or a new one (counter 0, now)."""
    versions = data.get(DATA_VERSION)
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        first = versions[0]
        return {
            "counter": int(first.get("counter", 0)),
            "timestamp": int(first.get("timestamp", 0)),
        }
    return {"counter": 0, "timestamp": int(time.time() * 1000)}


def write_acl_file(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` with the next data version (``updateAclConfigFileVersion``), in place
    of the file through a rename, so that the watcher never reads half a file."""
    version = data_version(data)
    data[DATA_VERSION] = [{"counter": version["counter"] + 1, "timestamp": int(time.time() * 1000)}]
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(yaml.safe_dump(data, default_flow_style=False, sort_keys=False), "utf-8")
    scratch.replace(path)


def check_resource_perms(items: list[str] | None) -> None:
    """``Permission.checkResourcePerms``: each item ``name=PERM`` with a known PERM."""
    for item in items or []:
        _name, sep, perm = item.partition("=")
        if not sep or "=" in perm:
            raise ConfigError(
                f"Parse Resource format error for {item}.\n"
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        if not is_valid_perm(perm):
            raise ConfigError(
                f"Parse resource permission error for {item}.\n"
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )


def merge_account(existing: Mapping[str, Any] | None, update: Mapping[str, Any]) -> dict[str, Any]:
    """``createAclAccessConfigMap``: the account as stored after an update. Fields the update
    leaves empty keep their old value; ``admin`` is always written."""
    merged = dict(existing or {})
    access_key = update.get("accessKey")
    if not access_key or len(access_key) <= KEY_MIN_LENGTH:
        raise ConfigError(
            f"The accessKey={access_key} cannot be null and length should longer than 6"
        )
    merged["accessKey"] = access_key
    secret_key = update.get("secretKey")
    if secret_key:
        if len(secret_key) <= KEY_MIN_LENGTH:
            raise ConfigError(f"The secretKey={secret_key} value length should longer than 6")
        merged["secretKey"] = secret_key
    if update.get("whiteRemoteAddress") is not None:
        merged["whiteRemoteAddress"] = update["whiteRemoteAddress"]
    merged["admin"] = bool(update.get("admin", False))
    for key in ("defaultTopicPerm", "defaultGroupPerm"):
        if update.get(key):
            merged[key] = update[key]
    for key in ("topicPerms", "groupPerms"):
        if update.get(key) is not None:
            merged[key] = list(update[key])
    return merged


def accounts_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The file's accounts list (made when absent), for an edit."""
    accounts = data.get(ACCOUNTS)
    if not isinstance(accounts, list):
        accounts = []
        data[ACCOUNTS] = accounts
    return accounts

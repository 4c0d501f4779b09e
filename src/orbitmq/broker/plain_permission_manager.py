"""``PlainPermissionManager``: the broker's plain ACL (RocketMQ 4.9.8's class of that name):
the accounts and white addresses of ``$ROCKETMQ_HOME/conf/plain_acl.yml`` and every
``conf/acl/**/*.yml``, the check of each request, the admin edits, and the watch that reloads
the files when their modification times (or sizes) change (every 5 s, RocketMQ's
AclFileWatchService).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from orbitmq.broker.plain_access_resource import (
    ADMIN_CODES,
    Permission,
    PlainAccessResource,
    acl_refusal,
    check_permission,
    is_retry_topic,
    print_str,
)
from orbitmq.broker.plain_acl_file import (
    ACCOUNT_FIELDS,
    ACCOUNTS,
    GLOBAL_WHITE_ADDRS,
    accounts_of,
    build_account,
    check_keys,
    check_resource_perms,
    data_version,
    global_white_strategies,
    merge_account,
    read_acl_file,
    write_acl_file,
)
from orbitmq.broker.remote_address_strategy import RemoteAddressStrategy
from orbitmq.common.errors import ConfigError
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.common.topic import RMQ_SYS_TRACE_TOPIC
from orbitmq.protocol import acl_signer

log = logging.getLogger(__name__)

#: AclFileWatchService.WATCH_INTERVAL.
WATCH_INTERVAL_S: Final = 5.0
#: The default file under the home (RocketMQ: -Drocketmq.acl.plain.file).
DEFAULT_ACL_FILE: Final = "conf/plain_acl.yml"


@dataclass(frozen=True, slots=True)
class _Account:
    path: Path
    owned: PlainAccessResource
    white: RemoteAddressStrategy


@dataclass(slots=True)
class _AclTables:
    """One consistent load of every file: swapped whole, so a check never sees half."""

    files: list[Path] = field(default_factory=list)
    accounts: dict[str, _Account] = field(default_factory=dict)
    global_white: list[RemoteAddressStrategy] = field(default_factory=list)
    versions: dict[str, dict[str, int]] = field(default_factory=dict)


class PlainPermissionManager:
    """Owns the ACL tables loaded from the files under ``home`` and the task that watches
    them. ``validate`` is called for every request; edits and reloads replace the tables in
    one assignment. Use from one event loop (edits are serialised by a lock)."""

    def __init__(
        self,
        home: Path,
        acl_file: str = DEFAULT_ACL_FILE,
        *,
        watch_interval_s: float = WATCH_INTERVAL_S,
    ) -> None:
        self.home = home
        self.default_acl_dir = home / "conf" / "acl"
        self.default_acl_file = home / acl_file
        self.watch_interval_s = watch_interval_s
        self._tables = _AclTables()
        self._mtimes: dict[Path, tuple[int, int]] = {}
        self._watch_task: asyncio.Task[None] | None = None
        self._edit_lock = asyncio.Lock()

    # -- loading and watching ---------------------------------------------------------------

    def acl_files(self) -> list[Path]:
        """Every ``*.yml`` / ``*.yaml`` under conf/acl (its tools.yml aside), then the default
        file (``getAllAclFiles``)."""
        files: list[Path] = []
        if self.default_acl_dir.is_dir():
            for root, dirs, names in os.walk(self.default_acl_dir):
                dirs.sort()
                for name in sorted(names):
                    if name.endswith((".yml", ".yaml")) and name != "tools.yml":
                        files.append(Path(root) / name)
        if self.default_acl_file.exists() and self.default_acl_file not in files:
            files.append(self.default_acl_file)
        return files

    def load(self) -> None:
        """Read every file into new tables; ConfigError (a bad file) keeps the old ones. An
        access key in two files belongs to the first (RocketMQ warns the same way)."""
        if not self.default_acl_file.exists():
            # assureAclConfigFilesExist: the global white list lives in the default file.
            self.default_acl_file.parent.mkdir(parents=True, exist_ok=True)
            self.default_acl_file.touch()
        tables = _AclTables(files=self.acl_files())
        for path in tables.files:
            data = read_acl_file(path)
            if not data:
                log.warning("plain ACL: no data in %s", path)
                continue
            tables.global_white.extend(global_white_strategies(data, path))
            for account in data.get(ACCOUNTS) or []:
                if not isinstance(account, dict):
                    raise ConfigError(f"plain ACL file {path}: an account is not a mapping")
                try:
                    owned, white = build_account(account, path)
                except ConfigError as exc:
                    raise ConfigError(f"plain ACL file {path}: {exc}") from exc
                assert owned.access_key is not None
                if owned.access_key in tables.accounts:
                    log.warning("plain ACL: accessKey %s is repeated in %s", owned.access_key, path)
                    continue
                tables.accounts[owned.access_key] = _Account(path, owned, white)
            tables.versions[str(path)] = data_version(data)
        self._mtimes = self._modification_times(tables.files)
        self._tables = tables
        log.info(
            "plain ACL loaded: %d accounts, %d global white addresses from %s",
            len(tables.accounts),
            len(tables.global_white),
            ", ".join(map(str, tables.files)),
        )

    @staticmethod
    def _modification_times(files: list[Path]) -> dict[Path, tuple[int, int]]:
        # The size too: a file rewritten within the file system's timestamp granularity
        # keeps its modification time.
        times = {}
        for path in files:
            try:
                stat = path.stat()
                times[path] = (stat.st_mtime_ns, stat.st_size)
            except FileNotFoundError:
                times[path] = (-1, -1)
        return times

    def check_files(self) -> bool:
        """One round of the watch: reload when a file came, went or was modified. True when
        the tables were reloaded."""
        files = self.acl_files()
        if self._modification_times(files) == self._mtimes:
            return False
        try:
            self.load()
        except ConfigError as exc:
            # Remember the bad state, so the same broken file is reported once, not per round.
            self._mtimes = self._modification_times(files)
            log.error("plain ACL: the files were changed but not reloaded: %s", exc)
            return False
        return True

    async def start(self) -> None:
        if self._watch_task is None:
            self._watch_task = asyncio.create_task(
                run_every(self.watch_interval_s, self.check_files, "AclFileWatchService"),
                name="AclFileWatchService",
            )

    async def stop(self) -> None:
        task, self._watch_task = self._watch_task, None
        await cancel_and_wait(task)

    # -- the check --------------------------------------------------------------------------

    def validate(self, needed: PlainAccessResource, host: str) -> None:
        """``PlainPermissionManager.validate``: raises the refusal RocketMQ 4.9.8 answers."""
        tables = self._tables
        if any(strategy.match(host) for strategy in tables.global_white):
            return
        access_key = needed.access_key
        if access_key is None:
            raise acl_refusal("No accessKey is configured", "validate", 664)
        account = tables.accounts.get(access_key)
        if account is None:
            raise acl_refusal(f"No acl config for {access_key}", "validate", 668)
        # An account's white address admits without a signature (as in RocketMQ).
        if account.white.match(host):
            return
        signature = acl_signer.cal_signature(needed.content, account.owned.secret_key)
        if not hmac.compare_digest(signature, needed.signature or ""):
            raise acl_refusal(f"Check signature failed for accessKey={access_key}", "validate", 684)
        # Trace records are sent by every traced client: PUB on the trace topic is free.
        if needed.resource_perms.get(RMQ_SYS_TRACE_TOPIC) == Permission.PUB:
            return
        self._check_perm(needed, account.owned)

    @staticmethod
    def _check_perm(needed: PlainAccessResource, owned: PlainAccessResource) -> None:
        if needed.request_code in ADMIN_CODES and not owned.admin:
            raise acl_refusal(
                f"Need admin permission for request code={needed.request_code}, "
                f"but accessKey={owned.access_key} is not",
                "checkPerm",
                581,
            )
        if not owned.resource_perms and owned.admin:
            return
        for resource, perm in needed.resource_perms.items():
            is_group = is_retry_topic(resource)
            owned_perm = owned.resource_perms.get(resource)
            line = 611
            if owned_perm is None:
                owned_perm = owned.default_group_perm if is_group else owned.default_topic_perm
                line = 606
            if not check_permission(perm, owned_perm):
                raise acl_refusal(
                    f"No default permission for {print_str(resource, is_group)}", "checkPerm", line
                )

    # -- admin ------------------------------------------------------------------------------

    async def update_access_config(self, update: dict[str, Any]) -> None:
        """UPDATE_AND_CREATE_ACL_CONFIG: change the account in the file that holds it, or add
        it to the default file. ConfigError says what is wrong with the update."""
        check_keys(update.get("accessKey"), update.get("secretKey"))
        check_resource_perms(update.get("topicPerms"))
        check_resource_perms(update.get("groupPerms"))
        async with self._edit_lock:
            account = self._tables.accounts.get(update["accessKey"])
            path = account.path if account is not None else self.default_acl_file
            data = read_acl_file(path)
            accounts = accounts_of(data)
            index = next(
                (i for i, a in enumerate(accounts) if a.get("accessKey") == update["accessKey"]),
                None,
            )
            existing = accounts.pop(index) if index is not None else None
            accounts.append(merge_account(existing, update))
            await self._write_and_load(path, data)

    async def delete_access_config(self, access_key: str) -> bool:
        """DELETE_ACL_CONFIG: False when no file holds the account."""
        async with self._edit_lock:
            account = self._tables.accounts.get(access_key)
            if account is None:
                return False
            data = read_acl_file(account.path)
            accounts = accounts_of(data)
            kept = [a for a in accounts if a.get("accessKey") != access_key]
            if len(kept) == len(accounts):
                return False
            data[ACCOUNTS] = kept
            await self._write_and_load(account.path, data)
            return True

    async def update_global_white_addrs(self, addresses: list[str], file: str | None) -> bool:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace the list in ``file`` (None or empty: the
        default file), which must be an existing .yml/.yaml file under the home."""
        path = Path(file) if file else self.default_acl_file
        if not path.is_file() or not path.name.endswith((".yml", ".yaml")):
            log.error("plain ACL: %s is not an existing ACL file", path)
            return False
        if not path.resolve().is_relative_to(self.home.resolve()):
            log.error("plain ACL: %s is not under rocketmqHome %s", path, self.home)
            return False
        async with self._edit_lock:
            data = read_acl_file(path)
            data[GLOBAL_WHITE_ADDRS] = list(addresses)
            await self._write_and_load(path, data)
            return True

    async def _write_and_load(self, path: Path, data: dict[str, Any]) -> None:
        await asyncio.to_thread(write_acl_file, path, data)
        self.load()

    def config_version(self) -> str:
        """The default file's data version as JSON (``getAclConfigDataVersion``)."""
        version = self._tables.versions.get(str(self.default_acl_file)) or {
            "counter": 0,
            "timestamp": 0,
        }
        return orjson.dumps(version).decode()

    def all_config_versions(self) -> str:
        """Every file's data version, keyed by path (``getAllAclConfigVersion``), as JSON."""
        return orjson.dumps(self._tables.versions).decode()

    def all_acl_config(self) -> dict[str, Any]:
        """Every file's accounts (the first of each access key) and white addresses
        (``getAllAclConfig``), as GET_BROKER_CLUSTER_ACL_CONFIG's body holds them."""
        configs: list[dict[str, Any]] = []
        white: list[str] = []
        seen: set[str] = set()
        for path in self._tables.files:
            data = read_acl_file(path)
            white.extend(str(a) for a in data.get(GLOBAL_WHITE_ADDRS) or [])
            for account in data.get(ACCOUNTS) or []:
                key = account.get("accessKey")
                if key in seen:
                    continue
                seen.add(key)
                config = {name: account.get(name) for name in ACCOUNT_FIELDS}
                for name in ("accessKey", "secretKey"):
                    config[name] = None if config[name] is None else str(config[name])
                configs.append(config)
        return {"globalWhiteAddrs": white, "plainAccessConfigs": configs}

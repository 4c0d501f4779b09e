"""``ConsoleSessions``: who is logged in to a console that asks for ACL credentials. Each
session is an AdminClient signing with its user's access key and secret key, kept on the
server under a random token (the browser's cookie holds the token only, never the secret)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from orbitmq.client import AdminClient, ClientConfig, MQBrokerError
from orbitmq.common import OrbitError
from orbitmq.protocol.body.route import MASTER_ID

#: The idle time after which a session ends (rocketmq-dashboard's login lasts 30 minutes).
DEFAULT_SESSION_IDLE_S: Final = 1800.0


class LoginRefusedError(OrbitError):
    """The broker refused the access key and secret key (its remark is the message), or no
    broker could be asked."""


@dataclass(slots=True)
class ConsoleSession:
    """One logged-in user: the admin client with their credentials, and when they last
    asked for a page (monotonic seconds)."""

    access_key: str
    admin: AdminClient
    last_used_s: float


class ConsoleSessions:
    """Owns the sessions of one console and their admin clients, built from ``base`` (how to
    reach the cluster: name servers, TLS) plus each user's credentials. A session unused for
    ``idle_s`` ends; ended sessions' clients are shut down at the next login or page, or at
    ``close_all``. Use from the console's event loop only (not thread safe)."""

    def __init__(
        self,
        base: ClientConfig,
        *,
        idle_s: float = DEFAULT_SESSION_IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._base = base
        self.idle_s = idle_s
        self._clock = clock
        self._sessions: dict[str, ConsoleSession] = {}

    def _client_config(self, access_key: str, secret_key: str) -> ClientConfig:
        base = self._base
        return ClientConfig(
            namesrv_addr=base.namesrv_addr,
            mq_client_api_timeout_s=base.mq_client_api_timeout_s,
            use_tls=base.use_tls,
            tls_config=base.tls_config,
            access_key=access_key,
            secret_key=secret_key,
        )

    async def login(self, access_key: str, secret_key: str) -> str:
        """A new session's token once a broker accepted a request signed with the pair;
        LoginRefusedError with the broker's refusal otherwise."""
        await self.expire()
        admin = AdminClient(client_config=self._client_config(access_key, secret_key))
        await admin.start()
        try:
            await _check_signature(admin)
        except BaseException:
            await admin.shutdown()
            raise
        token = secrets.token_urlsafe(32)
        self._sessions[token] = ConsoleSession(access_key, admin, self._clock())
        return token

    async def session(self, token: str) -> ConsoleSession | None:
        """The live session of ``token`` (now marked used); None when unknown or ended."""
        await self.expire()
        found = self._sessions.get(token)
        if found is not None:
            found.last_used_s = self._clock()
        return found

    async def logout(self, token: str) -> None:
        ended = self._sessions.pop(token, None)
        if ended is not None:
            await ended.admin.shutdown()

    async def expire(self) -> None:
        """End the sessions idle for longer than ``idle_s``."""
        oldest = self._clock() - self.idle_s
        for token in [t for t, s in self._sessions.items() if s.last_used_s < oldest]:
            await self.logout(token)

    async def close_all(self) -> None:
        for token in list(self._sessions):
            await self.logout(token)

    def __len__(self) -> int:
        return len(self._sessions)


async def _check_signature(admin: AdminClient) -> None:
    """Ask a master broker for its runtime info: it needs no permission beyond a valid
    signature, so a refusal (SYSTEM_ERROR with the broker's remark) is a wrong login. The name
    server is no judge: it checks no signatures."""
    try:
        masters = [
            addr
            for data in (await admin.cluster_info()).broker_addr_table.values()
            if (addr := data.broker_addrs.get(MASTER_ID)) is not None
        ]
    except (OrbitError, OSError, TimeoutError) as exc:
        raise LoginRefusedError(f"cannot check the login: the name server: {exc}") from exc
    if not masters:
        raise LoginRefusedError("cannot check the login: no master broker is registered")
    problems: list[str] = []
    for addr in sorted(masters):
        try:
            await admin.broker_runtime_info(addr)
        except MQBrokerError as exc:
            raise LoginRefusedError(f"login refused by {addr}: {exc.remark}") from exc
        except (OrbitError, OSError, TimeoutError) as exc:
            problems.append(f"{addr}: {exc or type(exc).__name__}")
        else:
            return
    raise LoginRefusedError(f"cannot check the login: no broker answered ({'; '.join(problems)})")

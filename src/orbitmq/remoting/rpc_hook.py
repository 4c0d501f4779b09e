"""``RPCHook``: code run on every request before it is sent (client) or served (server)."""

from __future__ import annotations

from typing import Protocol

from orbitmq.protocol import RemotingCommand


class RPCHook(Protocol):
    """RocketMQ's ``RPCHook.doBeforeRequest``. On a client it may add extFields (a signature)
    before the request is written; on a server it may refuse the request by raising
    ``RequestRefusedError``, answered SYSTEM_ERROR with the error's remark before any
    processor sees the request. ``remote_addr`` is the peer, ``host:port``."""

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None: ...

"""``AclClientRPCHook``: signs every request a client sends with its session credentials, as
RocketMQ's ``AclClientRPCHook`` does, so that a broker with aclEnable=true lets it in."""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.protocol import RemotingCommand, acl_signer


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """RocketMQ's ``SessionCredentials``: an account of a broker's plain_acl.yml."""

    access_key: str
    secret_key: str
    security_token: str | None = None


class AclClientRPCHook:
    """Adds AccessKey, SecurityToken (when set) and Signature to each request before it is
    written. Holds only immutable credentials: safe from any task or thread."""

    def __init__(self, credentials: SessionCredentials) -> None:
        self.credentials = credentials

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
        credentials = self.credentials
        acl_signer.sign_request(
            request, credentials.access_key, credentials.secret_key, credentials.security_token
        )

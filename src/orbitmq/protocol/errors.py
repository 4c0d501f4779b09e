"""Protocol errors: bytes from the network that are not a valid RocketMQ remoting frame."""

from __future__ import annotations

from orbitmq.common.errors import OrbitError


class ProtocolError(OrbitError):
    """A malformed or oversize frame or header. The connection that sent it is closed."""

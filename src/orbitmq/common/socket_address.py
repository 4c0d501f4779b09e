"""Hosts as RocketMQ packs them into records and message ids: IP bytes, then the port."""

from __future__ import annotations

import ipaddress
import socket
import struct
from functools import lru_cache
from typing import Final

from orbitmq.common.message import SocketAddress

_PORT: Final = struct.Struct(">i")


def pack_socket_address(address: SocketAddress) -> bytes:
    """IP (4 or 16 bytes) followed by the port as int32."""
    return _packed_ip(address[0]) + _PORT.pack(address[1])


def unpack_socket_address(data: bytes | memoryview) -> SocketAddress:
    return (_ip_text(bytes(data[:-4])), _PORT.unpack_from(data, len(data) - 4)[0])


# A store or a consumer sees a handful of hosts millions of times: convert each once.
@lru_cache(maxsize=4096)
def _packed_ip(text: str) -> bytes:
    return ipaddress.ip_address(text).packed


@lru_cache(maxsize=4096)
def _ip_text(packed: bytes) -> str:
    if len(packed) == 4:
        return socket.inet_ntoa(packed)
    return str(ipaddress.ip_address(packed))


def is_ipv6(address: SocketAddress) -> bool:
    return ":" in address[0]

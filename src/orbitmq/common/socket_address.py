"""Hosts as RocketMQ packs them into records and message ids: IP bytes, then the port."""

from __future__ import annotations

import ipaddress
import struct
from typing import Final

from orbitmq.common.message import SocketAddress

_PORT: Final = struct.Struct(">i")


def pack_socket_address(address: SocketAddress) -> bytes:
    """IP (4 or 16 bytes) followed by the port as int32."""
    return ipaddress.ip_address(address[0]).packed + _PORT.pack(address[1])


def unpack_socket_address(data: bytes | memoryview) -> SocketAddress:
    ip = ipaddress.ip_address(bytes(data[:-4]))
    return (str(ip), _PORT.unpack_from(data, len(data) - 4)[0])


def is_ipv6(address: SocketAddress) -> bool:
    return ":" in address[0]

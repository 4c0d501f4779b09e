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


#: Hosts a server binds to listen on every interface.
WILDCARD_HOSTS: Final = frozenset({"", "0.0.0.0", "::"})


def is_wildcard(host: str) -> bool:
    return host in WILDCARD_HOSTS


def local_address() -> str:
    """This host's address as other hosts reach it: the address of the interface that holds
    the route out (RocketMQ's RemotingUtil.getLocalAddress takes the first non-loopback
    address); 127.0.0.1 on a machine without a network.

    A UDP socket "connected" to an address sends nothing; the kernel only picks the route
    and, with it, the source address.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routed like any remote host
            host: str = probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"
    return host if host != "0.0.0.0" else "127.0.0.1"


def advertised_host(bind_address: str) -> str:
    """The host a server bound to ``bind_address`` gives to others: that address itself, or
    this host's address when it listens on every interface."""
    return local_address() if is_wildcard(bind_address) else bind_address

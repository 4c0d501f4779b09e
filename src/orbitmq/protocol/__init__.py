"""Sans-IO RocketMQ remoting: frames, JSON and binary headers, request and response codes.
No sockets here: ``orbitmq.remoting`` moves the bytes.

What two of namesrv, broker and client need of the wire (codes, headers, bodies, the
PermName / TopicSysFlag / PullSysFlag bits) lives here, once, since those three never import
each other (docs/design/layers.md)."""

from orbitmq.protocol import acl_signer, body, header, pop_extra_info
from orbitmq.protocol.body import *  # noqa: F403
from orbitmq.protocol.errors import ProtocolError
from orbitmq.protocol.frame_decoder import FrameDecoder
from orbitmq.protocol.header import *  # noqa: F403
from orbitmq.protocol.language_code import LanguageCode
from orbitmq.protocol.remoting_command import (
    CURRENT_VERSION,
    MAX_FRAME_BYTES,
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    RemotingCommand,
    SerializeType,
    check_frame_length,
    decode_command,
    decode_header,
    next_opaque,
)
from orbitmq.protocol.request_code import RequestCode
from orbitmq.protocol.response_code import ResponseCode
from orbitmq.protocol.server_role import (
    BROKER_REQUEST_CODES,
    DEFAULT_BROKER_PORT,
    DEFAULT_NAMESRV_PORT,
    NAMESRV_REQUEST_CODES,
    wrong_server_problem,
)

__all__ = [
    "BROKER_REQUEST_CODES",
    "CURRENT_VERSION",
    "DEFAULT_BROKER_PORT",
    "DEFAULT_NAMESRV_PORT",
    "MAX_FRAME_BYTES",
    "NAMESRV_REQUEST_CODES",
    "ONEWAY_FLAG",
    "RESPONSE_FLAG",
    "FrameDecoder",
    "LanguageCode",
    "ProtocolError",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
    "acl_signer",
    "check_frame_length",
    "decode_command",
    "decode_header",
    "next_opaque",
    "pop_extra_info",
    "wrong_server_problem",
]
# The wire types are listed once, in their subpackages' __all__, and re-exported from here
# as they are (the star imports above), as asyncio's package composes its own.
__all__ += body.__all__
__all__ += header.__all__

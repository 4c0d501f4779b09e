"""Sans-IO RocketMQ remoting: frames, JSON and binary headers, request and response codes.
No sockets here: ``orbitmq.remoting`` moves the bytes."""

from orbitmq.protocol.errors import ProtocolError
from orbitmq.protocol.frame_decoder import FrameDecoder
from orbitmq.protocol.language_code import LanguageCode
from orbitmq.protocol.remoting_command import (
    CURRENT_VERSION,
    MAX_FRAME_BYTES,
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    RemotingCommand,
    SerializeType,
    decode_command,
    next_opaque,
)
from orbitmq.protocol.request_code import RequestCode
from orbitmq.protocol.response_code import ResponseCode

__all__ = [
    "CURRENT_VERSION",
    "MAX_FRAME_BYTES",
    "ONEWAY_FLAG",
    "RESPONSE_FLAG",
    "FrameDecoder",
    "LanguageCode",
    "ProtocolError",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
    "decode_command",
    "next_opaque",
]

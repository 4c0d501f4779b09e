"""RemotingCommand: one RocketMQ remoting request or response, and its wire form.

A frame is::

    length int32 (everything after this field) | serialize type (1 byte) + header length
    (3 bytes) | header (JSON, or RocketMQ's binary form) | body

Header fields: code, language, version, opaque, flag (bit 0 response, bit 1 oneway), remark
and extFields (string to string). Sans-IO: bytes in, commands out.
"""

from __future__ import annotations

import enum
import itertools
import struct
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from orbitmq.protocol.errors import ProtocolError
from orbitmq.protocol.header.command_header import CommandHeader
from orbitmq.protocol.language_code import LanguageCode
from orbitmq.protocol.response_code import ResponseCode

#: RocketMQ's frame limit (Netty's maxFrameLength): the length field and what it counts.
MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
RESPONSE_FLAG: Final = 1 << 0
ONEWAY_FLAG: Final = 1 << 1
#: RocketMQ 4.9.8's ``MQVersion.CURRENT_VERSION`` (V4_9_8): what a Java broker sends.
CURRENT_VERSION: Final = 409

_INT: Final = struct.Struct(">i")
_BINARY_HEAD: Final = struct.Struct(">hbhii")
_SHORT: Final = struct.Struct(">h")

_opaques = itertools.count(1)


class SerializeType(enum.IntEnum):
    """How the header is encoded: the high byte of the header-length field."""

    JSON = 0
    ROCKETMQ = 1


def next_opaque() -> int:
    """A request id unique within this process (wraps like Java's int)."""
    return next(_opaques) & 0x7FFFFFFF


@dataclass(slots=True)
class RemotingCommand:
    """A request or response. Plain data: owned by one task at a time."""

    code: int
    language: LanguageCode = LanguageCode.PYTHON
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON

    @classmethod
    def create_request(
        cls, code: int, ext_fields: dict[str, str] | None = None, body: bytes = b""
    ) -> RemotingCommand:
        return cls(code, opaque=next_opaque(), ext_fields=ext_fields or {}, body=body)

    @classmethod
    def create_response(
        cls,
        request: RemotingCommand,
        code: int,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """The answer to ``request``: same opaque and serialize type, response flag set."""
        return cls(
            code,
            language=LanguageCode.JAVA,
            opaque=request.opaque,
            flag=RESPONSE_FLAG,
            remark=remark,
            ext_fields=ext_fields or {},
            body=body,
            serialize_type=request.serialize_type,
        )

    @classmethod
    def create_success(
        cls,
        request: RemotingCommand,
        header: CommandHeader | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """The SUCCESS answer to ``request``, with its response header's fields (RocketMQ's
        custom header) and a body."""
        ext_fields = None if header is None else header.to_ext_fields()
        return cls.create_response(request, ResponseCode.SUCCESS, ext_fields=ext_fields, body=body)

    def set_code_and_remark(self, code: int, remark: str | None) -> None:
        """Turns this response into the answer ``code`` with ``remark``: a processor that
        builds its response first fills it in this way when a check refuses the request."""
        self.code = code
        self.remark = remark

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def mark_oneway(self) -> None:
        self.flag |= ONEWAY_FLAG

    # -- encoding -----------------------------------------------------------------------

    def encode(self) -> bytes:
        """The whole frame, length field included."""
        return self.encode_head() + self.body

    def encode_head(self) -> bytes:
        """The frame up to its body: length field, serialize type and header length, header.

        Sent followed by ``body`` as a separate buffer, a large body (a pull's records) is not
        copied into one frame first. Raises ProtocolError for a frame over MAX_FRAME_BYTES.
        """
        if self.serialize_type is SerializeType.ROCKETMQ:
            header = self._binary_header()
        else:
            header = self._json_header()
        length = 4 + len(header) + len(self.body)
        if length + 4 > MAX_FRAME_BYTES:
            raise ProtocolError(f"a frame of {length + 4} bytes exceeds {MAX_FRAME_BYTES}")
        mark = (int(self.serialize_type) << 24) | len(header)
        return b"".join((_INT.pack(length), _INT.pack(mark), header))

    def _json_header(self) -> bytes:
        # RocketMQ's fastjson writes fields in alphabetical order and leaves out nulls; the
        # same order makes our frames comparable byte for byte with a Java broker's.
        header: dict[str, Any] = {"code": self.code}
        if self.ext_fields:
            header["extFields"] = self.ext_fields
        header["flag"] = self.flag
        header["language"] = self.language.name
        header["opaque"] = self.opaque
        if self.remark is not None:
            header["remark"] = self.remark
        header["serializeTypeCurrentRPC"] = self.serialize_type.name
        header["version"] = self.version
        return orjson.dumps(header)

    def _binary_header(self) -> bytes:
        remark = self.remark.encode() if self.remark else b""
        fields = b"".join(
            _SHORT.pack(len(k)) + k + _INT.pack(len(v)) + v
            for k, v in ((k.encode(), v.encode()) for k, v in self.ext_fields.items())
        )
        return b"".join(
            (
                _BINARY_HEAD.pack(
                    self.code, int(self.language), self.version, self.opaque, self.flag
                ),
                _INT.pack(len(remark)),
                remark,
                _INT.pack(len(fields)),
                fields,
            )
        )


# -- decoding ---------------------------------------------------------------------------


def check_frame_length(length: int, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
    """A frame's length field (what follows it) must be 4 .. max - 4: ProtocolError if not."""
    if length < 4 or length + 4 > max_frame_bytes:
        raise ProtocolError(f"frame length {length} is outside 4..{max_frame_bytes - 4}")


def decode_command(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """A command from one frame without its length field (what follows it)."""
    view = memoryview(frame)
    command, body_start = decode_header(view)
    command.body = bytes(view[body_start:])
    return command


def decode_header(frame: bytes | bytearray | memoryview) -> tuple[RemotingCommand, int]:
    """The command of one frame (without its length field), its body left empty, and where
    the body starts in ``frame``: for a reader that takes the body as a view, uncopied."""
    view = memoryview(frame)
    if len(view) < 4:
        raise ProtocolError(f"a frame of {len(view)} bytes has no header length")
    mark = _INT.unpack_from(view, 0)[0]
    kind, header_length = (mark >> 24) & 0xFF, mark & 0xFFFFFF
    if header_length > len(view) - 4:
        raise ProtocolError(f"header length {header_length} exceeds the {len(view) - 4}-byte frame")
    header = view[4 : 4 + header_length]
    if kind == SerializeType.JSON:
        command = _decode_json_header(header)
    elif kind == SerializeType.ROCKETMQ:
        command = _decode_binary_header(header)
    else:
        raise ProtocolError(f"unknown serialize type {kind}")
    return command, 4 + header_length


def _text(value: object) -> str:
    """extFields values as Java reads them into String: numbers and booleans as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    raise ProtocolError(f"extFields value {value!r} is not a string, number or boolean")


def _integer(header: dict[str, Any], name: str, default: int = 0) -> int:
    value = header.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ProtocolError(f"header field {name} is {value!r}, not an integer")
    try:
        return int(value)
    except ValueError as exc:
        raise ProtocolError(f"header field {name} is {value!r}, not an integer") from exc


def _decode_json_header(header: memoryview) -> RemotingCommand:
    try:
        parsed = orjson.loads(header)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"JSON header does not parse: {exc}") from exc
    if not isinstance(parsed, dict):
        raise ProtocolError("JSON header is not an object")
    ext = parsed.get("extFields") or {}
    if not isinstance(ext, dict):
        raise ProtocolError("extFields is not an object")
    remark = parsed.get("remark")
    get = parsed.get
    code, version, opaque, flag = (
        get("code", 0),
        get("version", 0),
        get("opaque", 0),
        get("flag", 0),
    )
    if not (type(code) is type(version) is type(opaque) is type(flag) is int):
        # The usual header has plain JSON numbers; anything else goes through the checks.
        code, version, opaque, flag = (_integer(parsed, name) for name in _HEADER_INTEGERS)
    # map() over builtins: no Python frame per field (this runs for every request).
    if not all(map(isinstance, ext.values(), itertools.repeat(str))):
        ext = {str(k): _text(v) for k, v in ext.items() if v is not None}
    return RemotingCommand(
        code=code,
        language=LanguageCode.parse(parsed.get("language")),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=None if remark is None else str(remark),
        ext_fields=ext,
        serialize_type=SerializeType.JSON,
    )


_HEADER_INTEGERS: Final = ("code", "version", "opaque", "flag")


def _decode_binary_header(header: memoryview) -> RemotingCommand:
    try:
        code, language, version, opaque, flag = _BINARY_HEAD.unpack_from(header, 0)
        position = _BINARY_HEAD.size
        remark_length = _INT.unpack_from(header, position)[0]
        remark = bytes(header[position + 4 : position + 4 + remark_length]).decode()
        position += 4 + remark_length
        fields_length = _INT.unpack_from(header, position)[0]
        position += 4
        fields_end = position + fields_length
        if remark_length < 0 or fields_length < 0 or fields_end != len(header):
            raise ProtocolError("binary header lengths do not add up")
        ext: dict[str, str] = {}
        while position < fields_end:
            key_length = _SHORT.unpack_from(header, position)[0]
            key = bytes(header[position + 2 : position + 2 + key_length]).decode()
            position += 2 + key_length
            value_length = _INT.unpack_from(header, position)[0]
            ext[key] = bytes(header[position + 4 : position + 4 + value_length]).decode()
            position += 4 + value_length
            if key_length < 0 or value_length < 0 or position > fields_end:
                raise ProtocolError("binary extFields run past the header")
    except (struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"binary header is malformed: {exc}") from exc
    return RemotingCommand(
        code=code,
        language=LanguageCode.parse(language),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark if remark_length else None,
        ext_fields=ext,
        serialize_type=SerializeType.ROCKETMQ,
    )

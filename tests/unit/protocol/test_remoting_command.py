"""The remoting codec: both header forms, flags, frame limits and malformed input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.protocol import (
    MAX_FRAME_BYTES,
    FrameDecoder,
    GetMaxOffsetResponseHeader,
    LanguageCode,
    ProtocolError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    decode_command,
)

texts = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)
commands = st.builds(
    RemotingCommand,
    code=st.integers(-32768, 32767),
    language=st.sampled_from(list(LanguageCode)),
    version=st.integers(-32768, 32767),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.none() | texts.filter(bool),
    ext_fields=st.dictionaries(texts, texts, max_size=6),
    body=st.binary(max_size=300),
    serialize_type=st.sampled_from(list(SerializeType)),
)


@settings(max_examples=300)
@given(commands)
def test_every_command_survives_a_round_trip(command: RemotingCommand) -> None:
    frame = command.encode()
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert frame[4] == command.serialize_type
    (decoded,) = FrameDecoder().feed(frame)
    assert decoded == command


def test_binary_header_layout() -> None:
    command = RemotingCommand(
        RequestCode.HEART_BEAT,
        language=LanguageCode.JAVA,
        version=409,
        opaque=7,
        flag=2,
        remark="hi",
        ext_fields={"k": "vv"},
        serialize_type=SerializeType.ROCKETMQ,
    )
    frame = command.encode()
    header = frame[8:]
    expected = (
        struct.pack(">hbhii", 34, 0, 409, 7, 2)
        + struct.pack(">i", 2)
        + b"hi"
        + struct.pack(">i", 2 + 1 + 4 + 2)
        + struct.pack(">h", 1)
        + b"k"
        + struct.pack(">i", 2)
        + b"vv"
    )
    assert header == expected
    assert struct.unpack(">i", frame[4:8])[0] == (1 << 24) | len(expected)


def test_json_header_is_rocketmq_shaped() -> None:
    command = RemotingCommand(105, language=LanguageCode.JAVA, opaque=3, ext_fields={"topic": "T"})
    frame = command.encode()
    assert frame[8:] == (
        b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":3,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )


def test_json_header_values_may_be_strings_numbers_or_booleans() -> None:
    header = (
        b'{"code":"310","language":3,"version":"63","opaque":"9","flag":0,'
        b'"extFields":{"a":"g","d":4,"n":true,"x":null}}\n'
    )
    command = decode_command(struct.pack(">i", len(header)) + header)
    assert (command.code, command.version, command.opaque) == (310, 63, 9)
    assert command.language is LanguageCode.PYTHON
    assert command.ext_fields == {"a": "g", "d": "4", "n": "true"}


def test_response_keeps_opaque_and_serialize_type() -> None:
    request = RemotingCommand.create_request(RequestCode.PULL_MESSAGE)
    request.serialize_type = SerializeType.ROCKETMQ
    response = RemotingCommand.create_response(request, ResponseCode.PULL_NOT_FOUND, "none")
    assert response.opaque == request.opaque
    assert response.is_response and not request.is_response
    assert response.serialize_type is SerializeType.ROCKETMQ
    request.mark_oneway()
    assert request.is_oneway


def test_success_response_carries_fields_and_body() -> None:
    request = RemotingCommand.create_request(RequestCode.GET_MAX_OFFSET)
    response = RemotingCommand.create_success(
        request, GetMaxOffsetResponseHeader(offset=7), body=b"{}"
    )
    assert response.code == ResponseCode.SUCCESS
    assert response.opaque == request.opaque and response.is_response
    assert (response.remark, response.ext_fields, response.body) == (None, {"offset": "7"}, b"{}")


def test_a_prepared_response_is_refused_in_place() -> None:
    request = RemotingCommand.create_request(RequestCode.PULL_MESSAGE)
    response = RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR)
    response.set_code_and_remark(ResponseCode.NO_PERMISSION, "forbidden")
    assert (response.code, response.remark) == (ResponseCode.NO_PERMISSION, "forbidden")
    assert response.opaque == request.opaque


def test_request_opaques_differ() -> None:
    first = RemotingCommand.create_request(RequestCode.HEART_BEAT)
    second = RemotingCommand.create_request(RequestCode.HEART_BEAT)
    assert first.opaque != second.opaque


def _json(header: bytes) -> bytes:
    return struct.pack(">i", len(header)) + header


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (struct.pack(">i", 99) + b"{}", "header length 99 exceeds"),
        (b"\x00\x00", "no header length"),
        (struct.pack(">i", (7 << 24) | 2) + b"{}", "serialize type 7"),
        (_json(b"{nope"), "does not parse"),
        (_json(b"[]"), "not an object"),
        (_json(b'{"code":1,"extFields":[1,2]}'), "extFields is not an object"),
        (_json(b'{"code":"twelve"}'), "code"),
        (_json(b'{"code":1,"extFields":{"a":[1]}}'), "not a string, number or boolean"),
        (
            struct.pack(">i", (1 << 24) | 13) + struct.pack(">hbhii", 1, 0, 1, 1, 0),
            "binary header is malformed",
        ),
    ],
)
def test_malformed_headers_raise_protocol_errors(frame: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        decode_command(frame)


def test_oversize_and_negative_lengths_are_refused() -> None:
    with pytest.raises(ProtocolError, match="outside"):
        FrameDecoder().feed(struct.pack(">i", MAX_FRAME_BYTES))
    with pytest.raises(ProtocolError, match="outside"):
        FrameDecoder().feed(struct.pack(">i", -1))
    big = RemotingCommand(10, body=bytes(MAX_FRAME_BYTES))
    with pytest.raises(ProtocolError, match="exceeds"):
        big.encode()


def test_commands_before_trailing_garbage_are_delivered_then_the_stream_fails() -> None:
    good = RemotingCommand.create_request(RequestCode.SEND_MESSAGE, {"a": "b"}, b"body")
    decoder = FrameDecoder()
    delivered = decoder.feed(good.encode() + struct.pack(">i", -5) + b"garbage")
    assert delivered == [good]
    with pytest.raises(ProtocolError):
        decoder.feed(good.encode())


def test_a_partial_frame_waits_for_the_rest() -> None:
    frame = RemotingCommand.create_request(RequestCode.PULL_MESSAGE, body=b"x" * 100).encode()
    decoder = FrameDecoder()
    assert decoder.feed(frame[:50]) == []
    assert decoder.pending_bytes == 50
    (command,) = decoder.feed(frame[50:])
    assert command.body == b"x" * 100
    assert decoder.pending_bytes == 0


def test_codes_are_rocketmqs() -> None:
    assert RequestCode.SEND_MESSAGE.value == 10
    assert RequestCode.PULL_MESSAGE.value == 11
    assert RequestCode.SEND_MESSAGE_V2.value == 310
    assert RequestCode.SEND_BATCH_MESSAGE.value == 320
    assert RequestCode.GET_ROUTEINFO_BY_TOPIC.value == 105
    assert RequestCode.NOTIFY_CONSUMER_IDS_CHANGED.value == 40
    assert RequestCode.CHECK_TRANSACTION_STATE.value == 39
    assert ResponseCode.REQUEST_CODE_NOT_SUPPORTED.value == 3
    assert ResponseCode.TOPIC_NOT_EXIST.value == 17
    assert ResponseCode.PULL_OFFSET_MOVED.value == 21
    assert LanguageCode.parse("cpp") is LanguageCode.CPP
    assert LanguageCode.parse("COBOL") is LanguageCode.OTHER


def test_numbers_booleans_and_nulls_in_ext_fields_read_as_java_reads_them() -> None:
    command = decode_command(
        _json(b'{"code":10,"extFields":{"n":12,"f":1.5,"t":true,"s":"x","z":null}}')
    )
    assert command.ext_fields == {"n": "12", "f": "1.5", "t": "true", "s": "x"}
    plain = decode_command(_json(b'{"code":10,"extFields":{"a":"1","b":""}}'))
    assert plain.ext_fields == {"a": "1", "b": ""}

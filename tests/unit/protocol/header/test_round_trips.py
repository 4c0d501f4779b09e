"""Every header class survives to_ext_fields -> from_ext_fields, also through a whole frame
in both header encodings; the send headers convert between V1 and V2 without loss."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import orbitmq.protocol.header as header_package
from orbitmq.protocol import RemotingCommand, RequestCode, SerializeType, decode_command
from orbitmq.protocol.header import (
    CommandHeader,
    Int32,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)

HEADERS = sorted(
    (
        obj
        for obj in vars(header_package).values()
        if isinstance(obj, type) and issubclass(obj, CommandHeader) and obj is not CommandHeader
    ),
    key=lambda cls: cls.__name__,
)
#: Fields whose values RocketMQ's checkFields restricts.
RESTRICTED: dict[tuple[str, str], st.SearchStrategy[Any]] = {
    ("EndTransactionRequestHeader", "commit_or_rollback"): st.sampled_from([0, 8, 12]),
    ("CreateTopicRequestHeader", "topic_filter_type"): st.sampled_from(["SINGLE_TAG", "MULTI_TAG"]),
}
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=24)
BASE: dict[object, st.SearchStrategy[Any]] = {
    str: TEXT,
    bool: st.booleans(),
    int: st.integers(-(2**63), 2**63 - 1),
    Int32: st.integers(-(2**31), 2**31 - 1),
}


def _strategy(hint: object) -> st.SearchStrategy[Any]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        (inner,) = (arg for arg in typing.get_args(hint) if arg is not types.NoneType)
        return st.none() | BASE[inner]
    return BASE[hint]


def headers_of(cls: type[CommandHeader]) -> st.SearchStrategy[CommandHeader]:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {}
    for field in dataclasses.fields(typing.cast(Any, cls)):
        restricted = RESTRICTED.get((cls.__name__, field.name))
        fields[field.name] = _strategy(hints[field.name]) if restricted is None else restricted
    return st.builds(cls, **fields)


def test_the_package_exports_every_header() -> None:
    assert len(HEADERS) >= 50
    assert set(header_package.__all__) >= {cls.__name__ for cls in HEADERS}
    for cls in HEADERS:
        assert "Header" in cls.__name__
        assert cls.ext_keys(), cls


@pytest.mark.parametrize("cls", HEADERS, ids=lambda cls: cls.__name__)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(cls: type[CommandHeader], data: st.DataObject) -> None:
    header = data.draw(headers_of(cls))
    ext = header.to_ext_fields()
    assert all(isinstance(v, str) for v in ext.values())
    assert set(ext) <= set(cls.ext_keys().values())
    assert cls.from_ext_fields(ext) == header
    for serialize_type in SerializeType:
        command = RemotingCommand(RequestCode.SEND_MESSAGE, ext_fields=ext)
        command.serialize_type = serialize_type
        decoded = decode_command(command.encode()[4:])
        assert cls.from_ext_fields(decoded.ext_fields) == header


def test_v2_uses_rocketmq_s_short_keys_for_the_v1_fields() -> None:
    v1 = SendMessageRequestHeader.ext_keys()
    v2 = SendMessageRequestHeaderV2.ext_keys()
    assert set(v1) == set(v2)  # the same attributes, so conversion is a copy
    assert {v1[attr]: v2[attr] for attr in v1} == {
        "producerGroup": "a",
        "topic": "b",
        "defaultTopic": "c",
        "defaultTopicQueueNums": "d",
        "queueId": "e",
        "sysFlag": "f",
        "bornTimestamp": "g",
        "flag": "h",
        "properties": "i",
        "reconsumeTimes": "j",
        "unitMode": "k",
        "maxReconsumeTimes": "l",
        "batch": "m",
        "bname": "n",
    }


@settings(max_examples=100)
@given(headers_of(SendMessageRequestHeader))
def test_v1_to_v2_and_back(v1: CommandHeader) -> None:
    assert isinstance(v1, SendMessageRequestHeader)
    v2 = v1.to_v2()
    assert isinstance(v2, SendMessageRequestHeaderV2)
    assert v2.to_v1() == v1
    assert vars(v2) == vars(v1)
    renamed = {
        SendMessageRequestHeader.ext_keys()[attr]: v2.to_ext_fields()[key]
        for attr, key in SendMessageRequestHeaderV2.ext_keys().items()
        if key in v2.to_ext_fields()
    }
    assert renamed == v1.to_ext_fields()

"""The stored-record layout's named positions, gathers and walks, checked against the
hand-written golden record and the independent reader in ``codec_support``."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from orbitmq.common import MessageExt, crc32, encode_message
from orbitmq.common import record_layout as rl
from orbitmq.common.errors import MessageFormatError
from tests.unit.common.codec_support import GOLDEN_CRC, GOLDEN_RECORD, read_record


def test_crc32_is_rocketmqs_utilall_crc32() -> None:
    assert crc32(b"hi") == GOLDEN_CRC
    assert crc32(memoryview(b"\xff" * 1000)) == zlib.crc32(b"\xff" * 1000) & 0x7FFFFFFF
    assert crc32(b"") == 0


@pytest.mark.parametrize(
    ("position", "fmt", "value"),
    [
        (rl.TOTALSIZE_POSITION, ">i", 101),
        (rl.MAGICCODE_POSITION, ">i", rl.MESSAGE_MAGIC_CODE),
        (rl.BODYCRC_POSITION, ">i", GOLDEN_CRC),
        (rl.QUEUEID_POSITION, ">i", 1),
        (rl.FLAG_POSITION, ">i", 2),
        (rl.QUEUEOFFSET_POSITION, ">q", 3),
        (rl.PHYSICALOFFSET_POSITION, ">q", 4),
        (rl.SYSFLAG_POSITION, ">i", 0),
        (rl.BORNTIMESTAMP_POSITION, ">q", 5),
        (rl.STORETIMESTAMP_POSITION_V4, ">q", 6),
        (rl.RECONSUMETIMES_POSITION_V4, ">i", 7),
        (rl.PREPAREDTRANSACTIONOFFSET_POSITION_V4, ">q", 8),
        (rl.BODYLEN_POSITION_V4, ">i", 2),
    ],
)
def test_every_named_position_reads_its_field_of_the_golden_record(
    position: int, fmt: str, value: int
) -> None:
    assert struct.unpack_from(fmt, GOLDEN_RECORD, position)[0] == value


def test_hosts_and_body_sit_where_the_layout_says() -> None:
    hosts = GOLDEN_RECORD[rl.BORNHOST_POSITION : rl.BORNHOST_POSITION + rl.HOST_V4_LENGTH]
    assert hosts == bytes.fromhex("7F00000100002A9F")
    store = GOLDEN_RECORD[rl.STOREHOST_POSITION_V4 : rl.STOREHOST_POSITION_V4 + rl.HOST_V4_LENGTH]
    assert store == bytes.fromhex("0A00000200002A9F")
    assert GOLDEN_RECORD[rl.BODY_POSITION_V4 : rl.BODY_POSITION_V4 + 2] == b"hi"
    assert rl.RECORD_PREFIX[0].size == rl.BODY_POSITION_V4 == rl.PREFIX_V4_DTYPE.itemsize


@pytest.mark.parametrize(("born", "store"), [(False, True), (True, False), (True, True)])
def test_ipv6_hosts_move_the_later_fields(born: bool, store: bool) -> None:
    message = MessageExt(
        topic="T",
        body=b"body",
        store_timestamp=77,
        born_host=("::1", 1) if born else ("127.0.0.1", 1),
        store_host=("::2", 2) if store else ("127.0.0.2", 2),
    )
    record = encode_message(message)
    sys_flag = struct.unpack_from(">i", record, rl.SYSFLAG_POSITION)[0]
    assert struct.unpack_from(">q", record, rl.store_timestamp_position(sys_flag))[0] == 77
    assert rl.record_prefix(sys_flag).size == read_record(record).size - len(b"body") - 3 - 1


def test_gather_reads_big_endian_fields_and_clamps_past_the_end() -> None:
    data = np.frombuffer(GOLDEN_RECORD * 3, np.uint8)
    starts = np.array([0, 101, 202], np.int64)
    assert rl.gather(data, starts + rl.QUEUEOFFSET_POSITION, ">i8").tolist() == [3, 3, 3]
    assert rl.gather(data, starts + rl.TOTALSIZE_POSITION, ">i4").tolist() == [101] * 3
    # Past the end: read from the last bytes, never an IndexError (callers validate).
    assert len(rl.gather(data, np.array([len(data) - 1], np.int64), ">i8")) == 1
    assert rl.gather(data, np.array([], np.int64), ">i4").tolist() == []


def test_walk_finds_records_and_stops_at_what_is_not_one() -> None:
    blank = struct.pack(">ii", 50, rl.BLANK_MAGIC_CODE)
    walk = rl.walk_records(GOLDEN_RECORD * 2 + blank, 1000)
    assert (walk.starts, walk.end, walk.problem, walk.end_of_file) == ([0, 101], 202, "", True)
    whole = rl.walk_records(GOLDEN_RECORD * 2, 202)
    assert (whole.starts, whole.end, whole.problem) == ([0, 101], 202, "")
    head = rl.walk_records(GOLDEN_RECORD + GOLDEN_RECORD[:5], 106)
    assert (head.starts, head.end) == ([0], 101) and "cut short" in head.problem
    short = rl.walk_records(GOLDEN_RECORD + GOLDEN_RECORD[:-5], 1000)
    assert (short.starts, short.end, short.overrun) == ([0], 101, 5)
    bad = rl.walk_records(GOLDEN_RECORD[:4] + bytes(4) + GOLDEN_RECORD[8:], 1000)
    assert bad.starts == [] and "magic code" in bad.problem
    assert rl.walk_records(GOLDEN_RECORD * 2, 50).starts == [0]


def test_batch_items_raise_on_inconsistent_lengths() -> None:
    item = rl.BATCH_ITEM_PREFIX.pack(29, 0, 0, 5, 2) + b"hi" + struct.pack(">h", 5) + b"a\x01b\x02x"
    assert list(rl.batch_items(memoryview(item))) == [(5, 20, 24, 29)]
    with pytest.raises(MessageFormatError, match="inconsistent lengths"):
        list(rl.batch_items(memoryview(item[:-1])))
    with pytest.raises(MessageFormatError, match="malformed batch body"):
        list(rl.batch_items(memoryview(item[:10])))

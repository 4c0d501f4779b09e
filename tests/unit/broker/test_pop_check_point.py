"""The revive log's records and FIFO POP's order info, alone: check point bits, ack records'
JSON (RocketMQ's short names), replay-relevant offsets, and the order info's blocking."""

from __future__ import annotations

from pathlib import Path

import orjson

from orbitmq.broker.consumer_order_info_manager import (
    ILLEGAL_OFFSET,
    NO_NEED_COMMIT,
    ConsumerOrderInfoManager,
)
from orbitmq.broker.pop_check_point import AckMsg, PopCheckPoint, ack_unique_id, ck_unique_id
from orbitmq.testing.manual_clock import ManualClock


def _ck() -> PopCheckPoint:
    return PopCheckPoint(
        start_offset=100,
        pop_time=5000,
        invisible_time=1000,
        queue_id=2,
        topic="t",
        cid="g",
        queue_offset_diff=[0, 1, 4],
        broker_name="b",
    )


def test_check_point_bits() -> None:
    ck = _ck()
    assert ck.num == 3 and ck.revive_time == 6000 and ck.end_offset == 105
    assert ck.index_of(104) == 2 and ck.index_of(102) == -1 and ck.index_of(99) == -1
    assert not ck.ack(102)
    assert ck.ack(101) and ck.bit_map == 0b010
    assert ck.unacked_offsets() == [100, 104]
    assert ck.ack(100) and ck.ack(104) and ck.all_acked


def test_check_point_json_uses_rocketmqs_names_and_round_trips() -> None:
    ck = _ck()
    ck.ack(101)
    raw = orjson.loads(ck.to_json())
    assert raw["so"] == 100 and raw["d"] == [0, 1, 4] and raw["n"] == 3 and raw["c"] == "g"
    assert PopCheckPoint.from_json(ck.to_json()) == ck
    # An old-style check point (no diff list): num consecutive offsets.
    old = PopCheckPoint.from_json(b'{"so":7,"pt":1,"it":2,"q":0,"t":"t","c":"g","n":3}')
    assert old.queue_offset_diff == [0, 1, 2]


def test_ack_records() -> None:
    one = AckMsg("g", "t", 2, 100, 5000, [104], "b")
    raw = orjson.loads(one.to_json())
    assert raw["ao"] == 104 and "aol" not in raw
    batch = AckMsg("g", "t", 2, 100, 5000, [100, 101], "b")
    assert orjson.loads(batch.to_json())["aol"] == [100, 101]
    assert AckMsg.from_json(batch.to_json()) == batch
    assert AckMsg.from_json(one.to_json()).key == _ck().key
    assert ck_unique_id(_ck()) == "t@2@100@g@5000@b@ck"
    assert ack_unique_id(one) == "t@2@104@g@5000@b@ack"
    assert ack_unique_id(batch).endswith("@bAck")


def test_order_info_blocks_until_acked_or_expired(tmp_path: Path) -> None:
    clock = ManualClock(10_000)
    manager = ConsumerOrderInfoManager(tmp_path / "consumerOrderInfo.json", clock)
    counts = manager.update(None, "t", "g", 0, 10_000, 1000, [5, 6, 8])
    assert counts == ["0 qo0%5 0", "0 qo0%6 0", "0 qo0%8 0"]
    assert manager.check_block(None, "t", "g", 0)
    assert manager.commit_and_next("t", "g", 0, 6, 10_000) == 5  # 5 still out
    assert manager.commit_and_next("t", "g", 0, 7, 10_000) == ILLEGAL_OFFSET
    assert manager.commit_and_next("t", "g", 0, 5, 9_999) == NO_NEED_COMMIT
    assert manager.commit_and_next("t", "g", 0, 5, 10_000) == 8
    clock.advance(1001)
    assert not manager.check_block(None, "t", "g", 0)  # 8's time is over
    again = manager.update(None, "t", "g", 0, clock.now_ms(), 1000, [8, 9])
    assert again == ["0 qo0%8 1", "0 qo0%9 0"]
    manager.update_next_visible_time("t", "g", 0, 8, clock.now_ms(), clock.now_ms() + 60_000)
    clock.advance(2000)
    assert manager.check_block(None, "t", "g", 0)  # 8 was given more time
    assert manager.persist()
    loaded = ConsumerOrderInfoManager(tmp_path / "consumerOrderInfo.json", clock)
    loaded.load()
    assert loaded.check_block(None, "t", "g", 0)
    assert loaded.consumed_count("t", "g", 0, 8) == 1

"""ProcessQueue's whole-batch bookkeeping against a message-by-message model: whatever the
pulls and completions (gaps, duplicates, out of order, unknown or repeated messages, orderly
takes), the commit points, counts, sizes and span are the model's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.client.process_queue import ProcessQueue
from orbitmq.common import MessageExt
from orbitmq.testing import ManualClock


class ModelQueue:
    """put / remove / take / commit one message at a time, as RocketMQ's ProcessQueue."""

    def __init__(self) -> None:
        self.held: dict[int, MessageExt] = {}
        self.consuming: dict[int, MessageExt] = {}
        self.size = 0
        self.queue_offset_max = 0

    def put(self, msgs: list[MessageExt]) -> None:
        for msg in msgs:
            offset = msg.queue_offset
            if offset in self.consuming:
                continue
            previous = self.held.get(offset)
            self.held[offset] = msg
            if previous is None:
                self.queue_offset_max = offset
                self.size += len(msg.body)
            else:
                self.size += len(msg.body) - len(previous.body)

    def remove(self, msgs: list[MessageExt]) -> int:
        if not self.held:
            return -1
        for msg in msgs:
            stored = self.held.pop(msg.queue_offset, None)
            if stored is not None:
                self.size -= len(stored.body)
        return min(self.held) if self.held else self.queue_offset_max + 1

    def take(self, count: int) -> list[MessageExt]:
        taken = [self.held.pop(offset) for offset in sorted(self.held)[:count]]
        self.consuming.update((m.queue_offset, m) for m in taken)
        return taken

    def commit(self) -> int:
        if not self.consuming:
            return -1
        highest = max(self.consuming)
        self.size -= sum(len(m.body) for m in self.consuming.values())
        self.consuming.clear()
        return highest + 1


def message(offset: int, size: int) -> MessageExt:
    return MessageExt(topic="T", body=b"x" * size, queue_offset=offset)


def same_state(pq: ProcessQueue, model: ModelQueue) -> None:
    offsets = sorted(model.held)
    assert pq.msg_count == len(model.held) + len(model.consuming)
    assert pq.msg_size == model.size
    assert pq.first_offset == (offsets[0] if offsets else None)
    assert pq.last_offset == (offsets[-1] if offsets else None)
    assert pq.max_span == (offsets[-1] - offsets[0] if offsets else 0)
    assert pq.queue_offset_max == model.queue_offset_max


offsets = st.integers(0, 60)
batches = st.lists(st.tuples(offsets, st.integers(0, 4)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_batches_keep_the_model_state(data: st.DataObject) -> None:
    pq = ProcessQueue(ManualClock(0))
    model = ModelQueue()
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        action = data.draw(st.sampled_from(["pull", "run", "done", "any", "take", "commit"]))
        if action == "pull":
            # Anything at all: duplicates, disorder, offsets already held or taken.
            batch = [message(o, n) for o, n in data.draw(batches, label="batch")]
            pq.put_messages(batch)
            model.put(batch)
        elif action == "run":
            # What a pull usually brings: ascending, past everything held.
            start = max([*model.held, *model.consuming, -1]) + 1
            gaps = data.draw(st.lists(st.integers(0, 2), max_size=10), label="gaps")
            batch = []
            for gap in gaps:
                start += gap
                batch.append(message(start, gap))
                start += 1
            pq.put_messages(batch)
            model.put(batch)
        elif action == "done":
            # A finished batch: a run of what is held, in order, minus a few retried.
            held = sorted(model.held)
            first = data.draw(st.integers(0, len(held)), label="first")
            last = data.draw(st.integers(first, len(held)), label="last")
            skip = data.draw(st.sets(st.integers(first, last)), label="skip")
            done = [model.held[o] for i, o in enumerate(held[first:last], first) if i not in skip]
            assert pq.remove_messages(done) == model.remove(done)
        elif action == "any":
            # Unknown, repeated and out-of-order messages (their bodies differ from the held).
            done = [message(o, n) for o, n in data.draw(batches, label="removed")]
            assert pq.remove_messages(iter(done)) == model.remove(done)
        elif action == "take":
            count = data.draw(st.integers(1, 5), label="count")
            assert pq.take_messages(count) == model.take(count)
        else:
            assert pq.commit() == model.commit()
        same_state(pq, model)

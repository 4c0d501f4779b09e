"""The writer process of the crash-recovery test (``tests/fault/test_crash_recovery.py``).

Usage: ``python -m tests.fault.crash_writer ROOT FIRST_SEQ SEED`` (run from the repository root).

It prints ``LOADING``, opens a SYNC_FLUSH MessageStore on ROOT (recovering whatever a previous
kill left), prints ``READY <abnormal> <valid offset> <truncated bytes>`` and then appends
forever from several threads: single messages and MessageExtBatch batches, every message's body,
tag and keys derived from its sequence number (``body_for``, ``properties_for``), so the test
can check content. After a put returns PUT_OK it prints one line and flushes stdout:

    ACK <first seq> <physical offset>[,<physical offset>...] <first queue offset> <topic> <queue id>

The messages of one put have consecutive sequence numbers and consecutive queue offsets, and one
physical offset each. A put with any other status prints ``NACK <first seq> <count> <status>``.
The process never exits on its own: the test kills it with SIGKILL.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
import traceback
from pathlib import Path

from orbitmq.common import Message, MessageExtBatch, UniqueIdGenerator, encode_batch_messages
from orbitmq.common import message_const as mc
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.store import FlushDiskType, MessageStore, MessageStoreConfig, PutMessageStatus
from tests.support import small_config

TOPICS = ("CrashTopicA", "CrashTopicB", "CrashTopicC")
QUEUES_PER_TOPIC = 3
WRITER_THREADS = 3
#: The property carrying a message's sequence number.
SEQ_PROPERTY = "SEQ"
#: Bodies of one batch put stay below this, so a batch always fits a 64 KiB commit log file.
MAX_BATCH_BODY_BYTES = 40_000
BORN_HOST = ("10.1.2.3", 52000)


def crash_config(root: Path | str) -> MessageStoreConfig:
    """Small files everywhere, so a few hundred messages roll commit log, consume queue and
    index files; SYNC_FLUSH, so PUT_OK means the record was synced."""
    return small_config(
        root,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 200,
        max_hash_slot_num=500,
        max_index_num=1500,
        flush_disk_type=FlushDiskType.SYNC_FLUSH,
    )


def body_for(seq: int) -> bytes:
    """The body of message ``seq``: mostly small, sometimes empty-ish, sometimes 8-16 KiB."""
    rng = random.Random(seq)
    roll = rng.random()
    if roll < 0.03:
        size = rng.randint(8_000, 16_000)
    elif roll < 0.3:
        size = rng.randint(0, 100)
    else:
        size = rng.randint(100, 2_000)
    return f"seq={seq};".encode() + rng.randbytes(size)


def tags_for(seq: int) -> str:
    return f"Tag{seq % 5}"


def key_for(seq: int) -> str:
    """The KEYS entry that names message ``seq`` alone."""
    return f"seq-{seq}"


def properties_for(seq: int, uniq: UniqueIdGenerator) -> dict[str, str]:
    return {
        mc.PROPERTY_TAGS: tags_for(seq),
        mc.PROPERTY_KEYS: f"{key_for(seq)} group-{seq % 7}",
        SEQ_PROPERTY: str(seq),
        mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: uniq.create(),
    }


def _chunks(seqs: list[int]) -> list[list[int]]:
    """Split one planned put into puts whose bodies fit a commit log file together."""
    chunks: list[list[int]] = [[]]
    size = 0
    for seq in seqs:
        length = len(body_for(seq))
        if chunks[-1] and size + length > MAX_BATCH_BODY_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(seq)
        size += length
    return chunks


class Writer:
    """Allocates sequence numbers and puts; one instance shared by the writer threads."""

    def __init__(self, store: MessageStore, first_seq: int, seed: int):
        self._store = store
        self._next_seq = first_seq
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._out_lock = threading.Lock()
        self._uniq = UniqueIdGenerator(ip=bytes([127, 0, 0, 1]))

    def _plan(self) -> tuple[list[int], str, int]:
        with self._lock:
            rng = self._rng
            count = rng.randint(2, 8) if rng.random() < 0.3 else 1
            seqs = list(range(self._next_seq, self._next_seq + count))
            self._next_seq += count
            return seqs, rng.choice(TOPICS), rng.randrange(QUEUES_PER_TOPIC)

    def _message(self, seqs: list[int], topic: str, queue_id: int) -> MessageExtBrokerInner:
        born = int(time.time() * 1000)
        if len(seqs) == 1:
            return MessageExtBrokerInner(
                topic=topic,
                body=body_for(seqs[0]),
                queue_id=queue_id,
                properties=properties_for(seqs[0], self._uniq),
                born_timestamp=born,
                born_host=BORN_HOST,
            )
        items = [Message(topic, body_for(s), 0, properties_for(s, self._uniq)) for s in seqs]
        return MessageExtBatch(
            topic=topic,
            body=encode_batch_messages(items),
            queue_id=queue_id,
            born_timestamp=born,
            born_host=BORN_HOST,
        )

    def emit(self, line: str) -> None:
        with self._out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def put_one(self) -> None:
        seqs, topic, queue_id = self._plan()
        for chunk in _chunks(seqs):
            result = self._store.put_message(self._message(chunk, topic, queue_id))
            append = result.append_result
            if result.status is PutMessageStatus.PUT_OK and append is not None:
                offsets = ",".join(str(o) for o in append.record_offsets)
                self.emit(f"ACK {chunk[0]} {offsets} {append.logics_offset} {topic} {queue_id}")
            else:
                self.emit(f"NACK {chunk[0]} {len(chunk)} {result.status.name}")

    def run(self) -> None:
        try:
            while True:
                self.put_one()
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            # A writer that cannot write fails the test: end the process so the test sees it.
            os._exit(3)


def main(argv: list[str]) -> None:
    root, first_seq, seed = argv[0], int(argv[1]), int(argv[2])
    store = MessageStore(crash_config(root))
    sys.stdout.write("LOADING\n")
    sys.stdout.flush()
    report = store.load()
    store.start()
    writer = Writer(store, first_seq, seed)
    writer.emit(f"READY {int(report.abnormal)} {report.valid_offset} {report.truncated_bytes}")
    threads = [
        threading.Thread(target=writer.run, name=f"writer-{i}", daemon=True)
        for i in range(WRITER_THREADS)
    ]
    for thread in threads:
        thread.start()
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])

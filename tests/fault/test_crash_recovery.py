"""Crash recovery under kill -9 (issue 2, section 4 "Crash").

A writer subprocess (``tests/fault/crash_writer.py``) appends to a SYNC_FLUSH store and prints
every acknowledged put; the test kills it with SIGKILL a random 50-400 ms after its first
acknowledgement, recovers the store in this process and checks:

- ``load()`` took the abnormal path (the abort file was left behind);
- every acknowledged message is in the commit log, intact (CRC), at its acknowledged physical
  offset and queue offset, and reachable with ``get_message`` at that queue offset;
- the tail is clean: the commit log ends exactly after the last valid record and the rest of
  the last file is zero; every record in the log decodes with a good CRC and its body is the
  one its sequence number gives;
- the consume queues match the log: every unit on disk points at a record of its topic and
  queue with that size, queue offset and tag hash code; each queue holds every record of its
  queue, numbered 0, 1, 2... with no gap; nothing follows the last unit;
- the index finds every message written in the cycle (and a sample of older ones) by key.

Then the writer starts again on the same directory (its own recovery of the recovered log must
cut nothing) and is killed again. In the 50-cycle run every fifth kill lands instead a random
0-100 ms into the writer's own recovery. Seeds are printed and appear in every assertion
message, with each cycle's acknowledged count and RecoveryReport; ``ORBITMQ_CRASH_SEED=<seed>``
replays a run's choices (not its timing).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from orbitmq.common import BLANK_MAGIC_CODE, MessageFormatError, decode_message
from orbitmq.common import message_const as mc
from orbitmq.store import GetMessageStatus, MessageStore, RecoveryReport
from tests.fault.crash_writer import SEQ_PROPERTY, body_for, crash_config, key_for, tags_for

REPO_ROOT = Path(__file__).resolve().parents[2]
FIRST_ACK_TIMEOUT_S = 60.0
#: Sequence numbers skipped between cycles: more than the writer can have in flight, so a
#: message put but not acknowledged before the kill never shares its number with a later one.
SEQ_GAP = 1000
#: Older acknowledged messages re-checked through get_message and the index each cycle.
OLD_SAMPLE = 300
CQ_UNIT = 20
HEAD = struct.Struct(">ii")
QUERY_END_MS = 2**62


@dataclass(frozen=True, slots=True)
class Ack:
    """One acknowledged message."""

    seq: int
    physical_offset: int
    queue_offset: int
    topic: str
    queue_id: int
    cycle: int


@dataclass(frozen=True, slots=True)
class Record:
    """One valid record found by scanning the commit log files."""

    physical_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    tags: str
    seq: int


#: Kill modes: a random 50-400 ms after the first acknowledgement (while writing), or a random
#: 0-100 ms after the writer announced it is loading (while it recovers the previous kill).
WRITING = "writing"
RECOVERING = "recovering"


@dataclass(slots=True)
class Cycle:
    number: int
    writer_seed: int
    first_seq: int
    mode: str
    delay_ms: float
    ready: str = ""
    acked: int = 0
    nacked: int = 0
    report: RecoveryReport | None = None


@dataclass(slots=True)
class CrashRun:
    """What the run did so far; ``describe`` goes into every assertion message."""

    seed: int
    cycles: list[Cycle] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)

    def describe(self) -> str:
        lines = [
            f"crash run seed={self.seed} (replay: ORBITMQ_CRASH_SEED={self.seed}), "
            f"{len(self.acks)} message(s) acknowledged in {len(self.cycles)} cycle(s):"
        ]
        for c in self.cycles:
            report = c.report
            recovered = (
                "not recovered yet"
                if report is None
                else (
                    f"abnormal={report.abnormal} scan_from={report.scan_from_offset} "
                    f"valid_offset={report.valid_offset} "
                    f"truncated_bytes={report.truncated_bytes} "
                    f"records_checked={report.records_checked} problem={report.problem!r}"
                )
            )
            lines.append(
                f"  cycle {c.number}: writer seed {c.writer_seed}, first seq {c.first_seq}, "
                f"killed {c.delay_ms:.0f} ms after "
                f"{'the first ack' if c.mode == WRITING else 'LOADING'}, acked {c.acked}, "
                f"nacked {c.nacked}, writer said {c.ready!r}; recovery: {recovered}"
            )
        return "\n".join(lines)


def java_hash(text: str) -> int:
    """Java's String.hashCode for ASCII text, written out independently of the store."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


# -- the writer process -------------------------------------------------------------------


def _pump(stream: IO[bytes], lines: list[bytes], marker: bytes, seen: threading.Event) -> None:
    for raw in stream:
        lines.append(raw)
        if raw.startswith(marker):
            seen.set()
    seen.set()  # end of output: wake the waiter either way


def _run_writer(root: Path, cycle: Cycle, stderr_path: Path, run: CrashRun) -> list[bytes]:
    """Start the writer, wait for the moment the cycle's mode names (its first ack, or the
    start of its recovery), let the deliberate random delay pass, kill it with SIGKILL;
    its complete output lines."""
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fault.crash_writer",
                str(root),
                str(cycle.first_seq),
                str(cycle.writer_seed),
            ],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert process.stdout is not None
    lines: list[bytes] = []
    marker = b"ACK " if cycle.mode == WRITING else b"LOADING"
    seen = threading.Event()
    reader = threading.Thread(target=_pump, args=(process.stdout, lines, marker, seen), daemon=True)
    reader.start()
    try:
        seen_in_time = seen.wait(FIRST_ACK_TIMEOUT_S)
        alive = process.poll() is None
        if seen_in_time and alive:
            time.sleep(cycle.delay_ms / 1000)  # the deliberate random moment of the crash
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have died on its own
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        reader.join()
        process.stdout.close()
    stderr_text = stderr_path.read_text(errors="replace")[-4000:]
    assert seen_in_time and alive, (
        f"the writer {'exited' if not alive else f'never printed {marker!r}'} "
        f"(exit code {process.returncode}); stderr:\n{stderr_text}\n{run.describe()}"
    )
    assert process.returncode == -signal.SIGKILL, (
        f"the writer ended with {process.returncode} before the kill; stderr:\n"
        f"{stderr_text}\n{run.describe()}"
    )
    # A line cut by the kill has no newline: the put it reports may or may not be acked.
    return [line for line in lines if line.endswith(b"\n")]


def _parse_output(lines: list[bytes], cycle: Cycle, run: CrashRun) -> None:
    for raw in lines:
        fields = raw.decode().split()
        if fields[0] == "LOADING":
            continue
        if fields[0] == "READY":
            cycle.ready = " ".join(fields)
        elif fields[0] == "ACK":
            first_seq, offsets, queue_offset = int(fields[1]), fields[2], int(fields[3])
            topic, queue_id = fields[4], int(fields[5])
            for i, offset in enumerate(offsets.split(",")):
                run.acks.append(
                    Ack(first_seq + i, int(offset), queue_offset + i, topic, queue_id, cycle.number)
                )
                cycle.acked += 1
        elif fields[0] == "NACK":
            cycle.nacked += int(fields[2])
        else:
            raise AssertionError(f"unexpected writer output {raw!r}\n{run.describe()}")


# -- checks ---------------------------------------------------------------------------------


def _scan_commit_log(directory: Path, file_size: int, ctx: str) -> tuple[dict[int, Record], int]:
    """Every record of the commit log files, checked independently of the store's recovery;
    and where the log ends (one past the last record, or the end of a file closed by an
    end-of-file blank record). Asserts every record is intact and the tail is zero."""
    names = sorted(p.name for p in directory.iterdir())
    assert names, f"no commit log file\n{ctx}"
    records: dict[int, Record] = {}
    seen_seqs: set[int] = set()
    end = 0
    for index, name in enumerate(names):
        file_from = int(name)
        assert file_from == index * file_size, f"commit log files are not contiguous: {names}"
        data = (directory / name).read_bytes()
        assert len(data) == file_size, f"{name} is {len(data)} bytes\n{ctx}"
        assert end == file_from, (
            f"the log ends at {end} but file {name} follows it (a file past the end?)\n{ctx}"
        )
        position = 0
        while position + 8 <= file_size:
            total, magic = HEAD.unpack_from(data, position)
            if magic == BLANK_MAGIC_CODE:
                assert total == file_size - position, (
                    f"end-of-file blank at {file_from + position} says {total} bytes\n{ctx}"
                )
                position = file_size
                break
            if total == 0 and magic == 0:
                break
            offset = file_from + position
            try:
                message = decode_message(data, position, check_crc=True)
            except MessageFormatError as exc:
                raise AssertionError(f"no valid record at {offset}: {exc}\n{ctx}") from exc
            assert message.commit_log_offset == offset, (
                f"record at {offset} says it is at {message.commit_log_offset}\n{ctx}"
            )
            seq = int(message.properties[SEQ_PROPERTY])
            assert seq not in seen_seqs, f"seq {seq} stored twice (again at {offset})\n{ctx}"
            seen_seqs.add(seq)
            assert message.body == body_for(seq), f"body of seq {seq} at {offset} differs\n{ctx}"
            tags = message.properties.get(mc.PROPERTY_TAGS, "")
            assert tags == tags_for(seq), f"seq {seq} at {offset} has tags {tags!r}\n{ctx}"
            assert key_for(seq) in message.keys, f"seq {seq} at {offset} lost its keys\n{ctx}"
            records[offset] = Record(
                offset,
                message.store_size,
                message.topic,
                message.queue_id,
                message.queue_offset,
                tags,
                seq,
            )
            position += message.store_size
        if position < file_size:
            # The log ends inside this file: it must be the last one, zero from here on.
            assert index == len(names) - 1, (
                f"the log ends at {file_from + position} inside {name}, "
                f"but {len(names) - index - 1} file(s) follow\n{ctx}"
            )
            tail = data[position:]
            assert tail.count(0) == len(tail), (
                f"{len(tail) - tail.count(0)} non-zero byte(s) after the last valid record at "
                f"{file_from + position}, the first at "
                f"{file_from + position + len(tail) - len(tail.lstrip(bytes(1)))}\n{ctx}"
            )
        end = file_from + position
    return records, end


def _check_queue_offsets(records: dict[int, Record], ctx: str) -> dict[tuple[str, int], int]:
    """Each queue's records, in log order, are numbered 0, 1, 2... Returns the counts."""
    counts: dict[tuple[str, int], int] = {}
    for offset in sorted(records):
        record = records[offset]
        key = (record.topic, record.queue_id)
        expected = counts.get(key, 0)
        assert record.queue_offset == expected, (
            f"record at {offset} (seq {record.seq}) of {key} has queue offset "
            f"{record.queue_offset}, expected {expected}\n{ctx}"
        )
        counts[key] = expected + 1
    return counts


def _check_consume_queues(
    store: MessageStore,
    root: Path,
    records: dict[int, Record],
    counts: dict[tuple[str, int], int],
    ctx: str,
) -> None:
    """Every unit of every consume queue file on disk matches the record it points at, and
    every record of the log has its unit."""
    config = store.config
    cq_root = root / "consumequeue"
    found_queues: set[tuple[str, int]] = set()
    for topic_dir in sorted(cq_root.iterdir()):
        for queue_dir in sorted(topic_dir.iterdir()):
            key = (topic_dir.name, int(queue_dir.name))
            found_queues.add(key)
            names = sorted(p.name for p in queue_dir.iterdir())
            data = b"".join((queue_dir / n).read_bytes() for n in names)
            for i, name in enumerate(names):
                assert int(name) == i * config.mapped_file_size_consume_queue, (
                    f"consume queue {key} files are not contiguous: {names}\n{ctx}"
                )
            units = 0
            for position in range(0, len(data), CQ_UNIT):
                offset = int.from_bytes(data[position : position + 8], "big", signed=True)
                size = int.from_bytes(data[position + 8 : position + 12], "big", signed=True)
                tags_code = int.from_bytes(data[position + 12 : position + 20], "big", signed=True)
                if size == 0:
                    tail = data[position:]
                    assert tail.count(0) == len(tail), (
                        f"consume queue {key} has non-zero bytes after its last unit "
                        f"{units - 1}\n{ctx}"
                    )
                    break
                where = f"consume queue {key} unit {units} -> ({offset}, {size}, {tags_code})"
                record = records.get(offset)
                assert record is not None, f"{where}: no record starts there\n{ctx}"
                assert size == record.size, f"{where}: the record has {record.size} bytes\n{ctx}"
                assert (record.topic, record.queue_id) == key, (
                    f"{where}: the record is of {(record.topic, record.queue_id)}\n{ctx}"
                )
                assert record.queue_offset == units, (
                    f"{where}: the record says queue offset {record.queue_offset}\n{ctx}"
                )
                assert tags_code == java_hash(record.tags), (
                    f"{where}: the record's tags {record.tags!r} hash to "
                    f"{java_hash(record.tags)}\n{ctx}"
                )
                units += 1
            assert units == counts.get(key, 0), (
                f"consume queue {key} holds {units} unit(s); the log has {counts.get(key, 0)} "
                f"message(s) of that queue\n{ctx}"
            )
            assert store.get_max_offset_in_queue(*key) == units, (
                f"get_max_offset_in_queue{key} = {store.get_max_offset_in_queue(*key)}, "
                f"the files hold {units} unit(s)\n{ctx}"
            )
            assert store.get_min_offset_in_queue(*key) == 0, ctx
    assert found_queues == set(counts), (
        f"consume queues on disk {sorted(found_queues)} != queues in the log "
        f"{sorted(counts)}\n{ctx}"
    )


def _check_acks(store: MessageStore, records: dict[int, Record], acks: list[Ack], ctx: str) -> None:
    """Every acknowledged message is in the log where and as it was acknowledged."""
    for ack in acks:
        record = records.get(ack.physical_offset)
        assert record is not None, f"acknowledged {ack} is not in the commit log\n{ctx}"
        assert (record.seq, record.topic, record.queue_id, record.queue_offset) == (
            ack.seq,
            ack.topic,
            ack.queue_id,
            ack.queue_offset,
        ), f"acknowledged {ack} but the log holds {record} there\n{ctx}"


def _check_reads(store: MessageStore, acks: list[Ack], ctx: str) -> None:
    """Through the store: get_message at the acked queue offset and a query by key."""
    for ack in acks:
        got = store.get_message("crash-test", ack.topic, ack.queue_id, ack.queue_offset, 1)
        assert got.status is GetMessageStatus.FOUND, f"get_message of {ack}: {got.status}\n{ctx}"
        message = decode_message(got.message_buffers[0], check_crc=True)
        assert message.commit_log_offset == ack.physical_offset, (
            f"get_message of {ack} returned the record at {message.commit_log_offset}\n{ctx}"
        )
        assert message.body == body_for(ack.seq), f"get_message of {ack}: body differs\n{ctx}"
        found = store.query_message(ack.topic, key_for(ack.seq), 32, 0, QUERY_END_MS)
        offsets = [decode_message(b).commit_log_offset for b in found.message_buffers]
        assert offsets == [ack.physical_offset], (
            f"query by key {key_for(ack.seq)!r} of {ack} found records at {offsets}\n{ctx}"
        )


def _check_index_of_records(
    store: MessageStore, records: dict[int, Record], first_seq: int, ctx: str
) -> None:
    """Every record of the last cycle, acknowledged or not, is found by its key."""
    for record in records.values():
        if record.seq < first_seq:
            continue
        found = store.query_message(record.topic, key_for(record.seq), 32, 0, QUERY_END_MS)
        offsets = [decode_message(b).commit_log_offset for b in found.message_buffers]
        assert offsets == [record.physical_offset], (
            f"query by key {key_for(record.seq)!r} of {record} found records at {offsets}\n{ctx}"
        )


def _recover_and_verify(root: Path, run: CrashRun, rng: random.Random) -> None:
    cycle = run.cycles[-1]
    config = crash_config(root)
    store = MessageStore(config)
    try:
        cycle.report = report = store.load()
    except Exception as exc:
        raise AssertionError(
            f"the store does not open after the kill: {exc!r}\n{run.describe()}"
        ) from exc
    try:
        ctx = run.describe()
        assert report.abnormal, f"the abort file was left by the kill: load() must say so\n{ctx}"
        records, end = _scan_commit_log(
            Path(config.commit_log_dir), config.mapped_file_size_commit_log, ctx
        )
        assert report.valid_offset == end, (
            f"recovery says the log ends at {report.valid_offset}; the records end at {end}\n{ctx}"
        )
        assert store.max_phy_offset == end, (
            f"max_phy_offset {store.max_phy_offset} != end of the records {end}\n{ctx}"
        )
        counts = _check_queue_offsets(records, ctx)
        _check_acks(store, records, run.acks, ctx)
        _check_consume_queues(store, root, records, counts, ctx)
        recent = [a for a in run.acks if a.cycle == cycle.number]
        older = [a for a in run.acks if a.cycle != cycle.number]
        _check_reads(store, recent + rng.sample(older, min(OLD_SAMPLE, len(older))), ctx)
        _check_index_of_records(store, records, cycle.first_seq, ctx)
    finally:
        store.shutdown()


def _crash_cycles(tmp_path: Path, cycles: int, recovering_every: int = 0) -> CrashRun:
    """Run ``cycles`` kill / recover cycles on one store directory; every
    ``recovering_every``-th cycle (if not 0) kills the writer while it recovers instead."""
    seed = int(os.environ.get("ORBITMQ_CRASH_SEED", random.randrange(2**32)))
    print(f"crash run seed {seed} (replay with ORBITMQ_CRASH_SEED={seed})")
    rng = random.Random(seed)
    run = CrashRun(seed)
    root = tmp_path / "store"
    next_seq = 0
    for number in range(1, cycles + 1):
        if recovering_every and number % recovering_every == 0:
            mode, delay_ms = RECOVERING, rng.uniform(0, 100)
        else:
            mode, delay_ms = WRITING, rng.uniform(50, 400)
        cycle = Cycle(number, rng.randrange(2**32), next_seq, mode, delay_ms)
        run.cycles.append(cycle)
        lines = _run_writer(root, cycle, tmp_path / f"writer-{number}.stderr", run)
        _parse_output(lines, cycle, run)
        ctx = run.describe()
        ready = cycle.ready.split()
        if mode == WRITING:
            assert cycle.acked > 0, f"cycle {number} acknowledged nothing\n{ctx}"
            assert len(ready) == 4, f"the writer did not report its recovery\n{ctx}"
        if number > 1 and ready:
            # The previous cycle's recovery left a consistent log: recovering it again (the
            # writer's own load) must find the same end and cut nothing.
            previous = run.cycles[-2].report
            assert previous is not None
            assert ready == ["READY", "1", str(previous.valid_offset), "0"], (
                f"recovering an already recovered log changed it\n{ctx}"
            )
        _recover_and_verify(root, run, rng)
        # Past every number this writer can have used, acknowledged or not.
        next_seq = max([cycle.first_seq, *(a.seq for a in run.acks)]) + SEQ_GAP
    print(run.describe())
    return run


@pytest.mark.slow
def test_crash_cycles_default(tmp_path: Path) -> None:
    """Three kill -9 / recover cycles: the part of the crash test that runs in `make test`."""
    run = _crash_cycles(tmp_path, 3)
    assert len(run.cycles) == 3


@pytest.mark.fault
@pytest.mark.timeout(1200)
def test_crash_cycles_many(tmp_path: Path) -> None:
    """Fifty kill -9 / recover cycles on the same store directory; every fifth kill lands
    while the writer recovers from the previous one."""
    run = _crash_cycles(tmp_path, 50, recovering_every=5)
    assert len(run.cycles) == 50

"""TopicPublishInfo: the producer's view of one topic's writable queues."""

from __future__ import annotations

import threading

from orbitmq.client import ThreadLocalIndex, TopicPublishInfo
from orbitmq.common import MessageQueue

QUEUES = [MessageQueue("T", broker, i) for broker in ("broker-a", "broker-b") for i in range(3)]


def test_write_queue_nums_default_to_the_queues_listed() -> None:
    info = TopicPublishInfo(QUEUES)
    assert info.ok()
    assert info.queue_nums_of_broker("broker-a") == 3
    assert info.queue_nums_of_broker("broker-x") == -1
    assert info.queue_nums_of_broker(None) == -1
    assert not TopicPublishInfo([]).ok()


def test_explicit_write_queue_nums_win() -> None:
    info = TopicPublishInfo(QUEUES, {"broker-a": 8})
    assert info.queue_nums_of_broker("broker-a") == 8
    assert info.queue_nums_of_broker("broker-b") == -1


def test_round_robin_visits_every_queue_once_per_lap() -> None:
    info = TopicPublishInfo(QUEUES, send_which_queue=ThreadLocalIndex(lambda: 12345))
    lap = [info.select_one_message_queue() for _ in range(len(QUEUES))]
    assert sorted(lap) == QUEUES


def test_each_thread_has_its_own_counter() -> None:
    index = ThreadLocalIndex(lambda: 0)
    assert index.increment_and_get() == 1
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(index.increment_and_get()))
    thread.start()
    thread.join()
    assert seen == [1]
    assert index.increment_and_get() == 2

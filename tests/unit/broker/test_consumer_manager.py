"""ConsumerManager, ProducerManager and ClientHousekeeping as pure state, with fake channels."""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.broker import (
    ClientChannelInfo,
    ClientHousekeeping,
    ConsumerManager,
    ProducerManager,
)
from orbitmq.filter import build_subscription_data
from orbitmq.protocol import ConsumeType, LanguageCode, MessageModel, RemotingCommand
from orbitmq.remoting import ChannelContext
from orbitmq.testing import ManualClock


@dataclass
class FakeChannel:
    id: int
    remote_address: str = "10.0.0.9:1234"
    closed: bool = False
    sent: list[RemotingCommand] = field(default_factory=list)

    @property
    def is_active(self) -> bool:
        return not self.closed

    def invoke_oneway(self, request: RemotingCommand) -> None:
        self.sent.append(request)

    def close(self) -> None:
        self.closed = True


def info(channel: FakeChannel, client_id: str) -> ClientChannelInfo:
    return ClientChannelInfo(channel, client_id, LanguageCode.CPP, 0)  # type: ignore[arg-type]


class Changes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, list[int]]] = []

    def __call__(self, group: str, channels: list[ChannelContext]) -> None:
        self.seen.append((group, [c.id for c in channels]))


def register(
    manager: ConsumerManager, channel: FakeChannel, client_id: str, sub: str = "*", version: int = 1
) -> bool:
    return manager.register_consumer(
        "g",
        info(channel, client_id),
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        None,
        [build_subscription_data("T", sub, version)],
    )


def test_register_reports_changes_and_keeps_the_newest_subscription() -> None:
    changes = Changes()
    manager = ConsumerManager(changes, clock=ManualClock(1_000))
    a, b = FakeChannel(1), FakeChannel(2)
    assert register(manager, a, "a@1")
    assert not register(manager, a, "a@1", "TagA", version=2)  # same channel, same topic
    sub = manager.find_subscription_data("g", "T")
    assert sub is not None and sub.sub_string == "TagA"
    assert not register(manager, a, "a@1", "TagB", version=1)  # older version ignored
    assert manager.find_subscription_data("g", "T").sub_string == "TagA"  # type: ignore[union-attr]
    assert register(manager, b, "b@1", "TagA", version=3)
    assert changes.seen == [("g", [1]), ("g", [1, 2])]


def test_dropped_topic_is_a_change() -> None:
    manager = ConsumerManager(clock=ManualClock(1_000))
    channel = FakeChannel(1)
    register(manager, channel, "a@1")
    assert manager.register_consumer("g", info(channel, "a@1"), None, None, None, [])
    assert manager.find_subscription_data("g", "T") is None


def test_scan_drops_and_closes_silent_channels() -> None:
    clock = ManualClock(1_000)
    consumers, producers = ConsumerManager(clock=clock), ProducerManager(clock=clock)
    old, fresh = FakeChannel(1), FakeChannel(2)
    register(consumers, old, "old@1")
    producers.register_producer("pg", info(old, "old@1"))
    clock.advance(100_000)
    register(consumers, fresh, "fresh@1")
    clock.advance(30_000)  # old is 130 s silent, fresh 30 s
    ClientHousekeeping(consumers, producers).scan_exception_channel()
    group = consumers.get_consumer_group_info("g")
    assert group is not None and group.all_client_ids() == ["fresh@1"]
    assert old.closed and not fresh.closed
    assert producers.groups() == []


def test_housekeeping_clears_closed_channels_once() -> None:
    changes = Changes()
    consumers, producers = ConsumerManager(changes), ProducerManager()
    a, b = FakeChannel(1), FakeChannel(2)
    register(consumers, a, "a@1")
    register(consumers, b, "b@1")
    producers.register_producer("pg", info(b, "b@1"))
    housekeeping = ClientHousekeeping(consumers, producers)
    changes.seen.clear()
    housekeeping.on_idle(b)  # type: ignore[arg-type]
    housekeeping.on_close(b)  # type: ignore[arg-type]
    assert changes.seen == [("g", [1])]
    assert producers.groups() == []
    housekeeping.on_close(a)  # type: ignore[arg-type]
    assert consumers.get_consumer_group_info("g") is None
    assert changes.seen == [("g", [1]), ("g", [])]

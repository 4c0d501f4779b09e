"""Range reads over blocking sockets, for threads without an event loop that move many bytes
(a Spark worker decoding pulls into Arrow columns).

The answers go from the socket into a buffer the channel keeps, and their records are handed
out as views of it: no hop through an event-loop thread, no copy per answer. One pull is kept
ahead: the next is asked for as soon as an answer's header says where it starts, so the
broker reads it while the caller decodes the answer in hand. The pulls, offset checks and
errors are those of :meth:`orbitmq.client.QueueReader.read`.
"""

from __future__ import annotations

import ssl as ssl_module
import threading
import time
from collections.abc import Iterator

from orbitmq.client.mq_client_api import pull_result_of
from orbitmq.client.pull_result import PullStatus
from orbitmq.client.queue_reader import check_progress, check_range, range_pull_header
from orbitmq.common import MessageQueue
from orbitmq.filter import SubscriptionData, build_subscription_data
from orbitmq.protocol import RemotingCommand, RequestCode
from orbitmq.remoting.blocking_channel import BlockingChannel
from orbitmq.remoting.remoting_client import DEFAULT_CONNECT_TIMEOUT_S
from orbitmq.remoting.rpc_hook import RPCHook


class BlockingRangeReader:
    """Owns the idle channels, by broker address; a read takes one for as long as it runs and
    gives it back when it ends cleanly (a read left with a pull in flight closes its channel).
    Safe from several threads: each read has its own channel."""

    def __init__(
        self,
        consumer_group: str,
        pull_timeout_s: float,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        ssl: ssl_module.SSLContext | None = None,
        rpc_hook: RPCHook | None = None,
    ) -> None:
        """``ssl``: connect to brokers with TLS (a client's ``use_tls``); ``rpc_hook``: runs
        on every pull before it is sent (a client's ACL signing hook)."""
        self._ssl = ssl
        self._rpc_hook = rpc_hook
        self._consumer_group = consumer_group
        self._pull_timeout_s = pull_timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._idle: dict[str, list[BlockingChannel]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def read_raw(
        self,
        addr: str,
        mq: MessageQueue,
        start_offset: int,
        end_offset: int,
        *,
        subscription: str,
        batch_size: int,
    ) -> Iterator[memoryview]:
        """The stored records of each pull over ``[start_offset, end_offset)`` of ``mq`` at
        the broker ``addr``. Each view is valid until the next one is asked for."""
        check_range(start_offset, end_offset, batch_size)
        if start_offset == end_offset:
            return
        sub = build_subscription_data(mq.topic, subscription, int(time.time() * 1000))
        channel = self._take(addr)
        try:
            offset = start_offset
            request = self._pull(addr, mq, sub, offset, end_offset, batch_size)
            channel.send(request, self._pull_timeout_s)
            while True:
                response, records = channel.receive(self._pull_timeout_s)
                result = pull_result_of(response, addr)
                check_progress(mq, offset, result)
                offset = result.next_begin_offset
                if offset < end_offset:
                    request = self._pull(addr, mq, sub, offset, end_offset, batch_size)
                    channel.send(request, self._pull_timeout_s)
                if result.pull_status is PullStatus.FOUND and len(records):
                    yield records
                if offset >= end_offset:
                    return
        finally:
            self._give_back(channel)

    def close(self) -> None:
        """Close every idle channel; channels in use close when their reads end."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for channels in idle.values():
            for channel in channels:
                channel.close()

    def _pull(
        self,
        addr: str,
        mq: MessageQueue,
        sub: SubscriptionData,
        offset: int,
        end_offset: int,
        batch_size: int,
    ) -> RemotingCommand:
        max_nums = min(batch_size, end_offset - offset)
        header = range_pull_header(self._consumer_group, mq, sub, offset, max_nums)
        request = RemotingCommand.create_request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
        if self._rpc_hook is not None:
            self._rpc_hook.do_before_request(addr, request)
        return request

    def _take(self, addr: str) -> BlockingChannel:
        """An idle channel to ``addr`` that is still open, else a new one."""
        while True:
            with self._lock:
                idle = self._idle.get(addr)
                channel = idle.pop() if idle else None
            if channel is None:
                return BlockingChannel(addr, self._connect_timeout_s, self._ssl)
            if not channel.peer_closed():
                return channel
            channel.close()

    def _give_back(self, channel: BlockingChannel) -> None:
        if channel.closed:
            return
        with self._lock:
            if not self._closed and channel.in_flight == 0:
                self._idle.setdefault(channel.addr, []).append(channel)
                return
        channel.close()

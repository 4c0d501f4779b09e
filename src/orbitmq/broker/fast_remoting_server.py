"""``FastRemotingServer``: the broker's second remoting port, listenPort - 2 (RocketMQ's
``fastRemotingServer``, the "VIP channel").

RocketMQ reaches it through ``MixAll.brokerVIPChannel`` (host:port - 2): a Java client with
``vipChannelEnabled`` (system property ``com.rocketmq.sendMessageWithVIPChannel``; true in
older 4.x clients, false in recent ones) sends messages there (pulls go to the listen
port), and a 4.9.8 slave's ``BrokerOuterAPI.getAllTopicConfig`` always asks its master
there (its other three metadata calls go to the listen port), so a RocketMQ slave of an
OrbitMQ master needs it.
RocketMQ has no key for this port and no way to turn it off: it is always listenPort - 2
(5.x takes any free port when that is below 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from orbitmq.broker.pull_message_processor import PullMessageProcessor
from orbitmq.remoting import RemotingServer, RequestExecutor, RequestProcessor, TlsSystemConfig

#: What RocketMQ's ``BrokerController.registerProcessor`` registers on its main server only:
#: the pull processor's codes. Such a request on this port falls to the default (admin)
#: processor, which answers REQUEST_CODE_NOT_SUPPORTED " request type 11 not supported": our
#: table answers the same for a code it does not hold.
MAIN_SERVER_ONLY_CODES: Final = PullMessageProcessor.REQUEST_CODES


def fast_listen_port(listen_port: int) -> int:
    """listenPort - 2; any free port (0) where that is not a port, as RocketMQ 5 does (so a
    broker on port 0 in tests gets an ephemeral VIP port, not port - 2 of its own)."""
    return max(listen_port - 2, 0)


class FastRemotingServer(RemotingServer):
    """Owns the VIP-channel listening socket and its connections: a ``RemotingServer`` on
    ``fast_listen_port(listen_port)`` holding the main server's registrations less
    ``MAIN_SERVER_ONLY_CODES``, with the same processors and executors (RocketMQ shares
    its thread pools between the two ports, so their queue bounds are shared too).

    ``bind`` names the VIP port in its error when that port is taken. Use from one event
    loop; not thread-safe.
    """

    def __init__(
        self,
        host: str,
        listen_port: int,
        registrations: Iterable[tuple[int, RequestProcessor, RequestExecutor]],
        channel_max_idle_s: float,
        tls: TlsSystemConfig | None = None,
    ) -> None:
        super().__init__(
            host, fast_listen_port(listen_port), channel_max_idle_s=channel_max_idle_s, tls=tls
        )
        self.main_listen_port = listen_port
        for code, processor, executor in registrations:
            if code not in MAIN_SERVER_ONLY_CODES:
                self.table.register_processor(code, processor, executor)

    async def bind(self) -> None:
        """Take the VIP port (see ``RemotingServer.bind``). Raises OSError naming the port
        and why it is listenPort - 2 when it is in use."""
        try:
            await super().bind()
        except OSError as exc:
            port = fast_listen_port(self.main_listen_port)
            raise OSError(
                exc.errno,
                f"cannot listen on {self.host}:{port}, the broker's VIP channel port "
                f"(listenPort {self.main_listen_port} - 2, RocketMQ's fast remoting server, "
                f"which RocketMQ clients and slaves call): {exc.strerror or exc}; free that "
                "port or choose another listenPort",
            ) from exc

"""A TCP relay for partition and latency tests: clients connect to the relay, which forwards
each connection to one upstream address, each chunk ``delay_s`` after it arrived, until
``cut``.

``cut`` models a network partition, not a close: the relay stops moving bytes in both
directions but keeps every socket open, so each end sees silence and only its own timeouts
end the connection (what the bytes were is kept in the kernel's buffers, as TCP would
retransmit them). A connection attempt while cut is closed at once (the peer sees it end and
tries again later). ``restore`` moves bytes again; a pair whose end closed meanwhile is closed
on the other side as soon as the relay sees it. ``sever`` models the machine at one end
dying: connections are reset and what was in flight is lost.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from collections import deque

_BUFFER = 64 * 1024
#: How often a pump looks at the cut flag and the stop flag while idle.
_POLL_S = 0.05


class TcpRelay:
    """Owns a listening socket on 127.0.0.1 (any free port), an accept thread and two pump
    threads per relayed connection. ``delay_s`` is a one-way latency added to every byte in
    both directions (a link between racks, where a slave's copy trails its master's).
    ``cut``, ``restore`` and ``close`` are safe from any thread."""

    def __init__(self, upstream: tuple[str, int], *, delay_s: float = 0.0) -> None:
        self._upstream = upstream
        self._delay_s = delay_s
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(_POLL_S)
        self._flowing = threading.Event()
        self._flowing.set()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        #: Bumped by ``sever``: pumps of an older epoch reset their sockets and end.
        self._epoch = 0
        #: Connections relayed so far (accepted while not cut).
        self.connections = 0
        self._accept_thread = threading.Thread(target=self._accept_loop, name="relay-accept")
        self._accept_thread.start()

    @property
    def address(self) -> str:
        host, port = self._server.getsockname()[:2]
        return f"{host}:{port}"

    @property
    def is_cut(self) -> bool:
        return not self._flowing.is_set()

    def cut(self) -> None:
        self._flowing.clear()

    def restore(self) -> None:
        self._flowing.set()

    def sever(self) -> None:
        """The link dies with the machine at one end: every relayed connection is reset and
        the bytes in flight are lost (a process killed alone still has its kernel send what
        it had written). Returns once they are gone; later connections are relayed."""
        self._flowing.clear()  # nothing moves from here on
        with self._lock:
            self._epoch += 1
            threads, self._threads = self._threads, []
            self._sockets = []
        for thread in threads:
            thread.join(5)
        self._flowing.set()

    def close(self) -> None:
        self._stopped.set()
        self._flowing.set()
        self._accept_thread.join(5)
        self._server.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            _close(sock)
        for thread in threads:
            thread.join(5)

    def __enter__(self) -> TcpRelay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                downstream, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.is_cut:
                _close(downstream)  # the partition: nothing gets through
                continue
            try:
                upstream = socket.create_connection(self._upstream, timeout=3)
            except OSError:
                _close(downstream)
                continue
            self.connections += 1
            self._relay(downstream, upstream)

    def _relay(self, downstream: socket.socket, upstream: socket.socket) -> None:
        pumps = [
            threading.Thread(target=self._pump, args=(downstream, upstream), name="relay-up"),
            threading.Thread(target=self._pump, args=(upstream, downstream), name="relay-down"),
        ]
        with self._lock:
            self._sockets += [downstream, upstream]
            self._threads += pumps
        for pump in pumps:
            pump.start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        """Move bytes from ``source`` to ``target``, each chunk ``delay_s`` after it was read,
        while flowing; close both when either ends (after delivering what was read), reset
        both when severed."""
        epoch = self._epoch
        # Read but not yet due: a partition delays bytes, never drops them.
        pending: deque[tuple[float, bytes]] = deque()
        severed = False
        try:
            while not self._stopped.is_set():
                if not self._flowing.wait(_POLL_S):
                    severed = epoch != self._epoch
                    if severed:
                        return
                    continue  # cut: leave the bytes in the kernel's buffers
                now = time.monotonic()
                while pending and pending[0][0] <= now:
                    target.sendall(pending.popleft()[1])
                wait_s = _POLL_S if not pending else min(_POLL_S, pending[0][0] - now)
                readable, _, _ = select.select([source], [], [], max(0.0, wait_s))
                if not readable:
                    continue
                data = source.recv(_BUFFER)
                if not data:
                    severed = self._deliver(pending, target, epoch)
                    break
                pending.append((time.monotonic() + self._delay_s, data))
        except (OSError, ValueError):  # ValueError: closed under select by ``close``
            pass
        finally:
            _close(source, reset=severed)
            _close(target, reset=severed)

    def _deliver(
        self, pending: deque[tuple[float, bytes]], target: socket.socket, epoch: int
    ) -> bool:
        """The source ended: what it sent before still arrives, when due and flowing. True
        when severed first (the rest is lost)."""
        while pending and not self._stopped.is_set():
            if epoch != self._epoch:
                return True
            due, data = pending[0]
            if not self._flowing.is_set() or time.monotonic() < due:
                time.sleep(_POLL_S / 5)
                continue
            target.sendall(data)
            pending.popleft()
        return False


def _close(sock: socket.socket, *, reset: bool = False) -> None:
    """Close ``sock``: a FIN after what was sent, or (``reset``) an RST and nothing more."""
    with contextlib.suppress(OSError):
        if reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            sock.shutdown(socket.SHUT_RDWR)
    sock.close()

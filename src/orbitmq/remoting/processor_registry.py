"""ProcessorRegistry: the wiring servers and clients share: their ``ProcessorTable`` and
their connection-event listeners."""

from __future__ import annotations

from orbitmq.remoting.channel_context import ChannelEventListener
from orbitmq.remoting.channel_event_listeners import ChannelEventListeners
from orbitmq.remoting.processor_table import ProcessorTable


class ProcessorRegistry:
    """Routes request codes arriving on this endpoint's connections to processors (register
    them with ``table.register_processor``), and connection events to listeners. Wiring
    happens before serving, on one event loop."""

    def __init__(self, table: ProcessorTable | None = None) -> None:
        self.table = table or ProcessorTable()
        self._listeners = ChannelEventListeners()

    def add_listener(self, listener: ChannelEventListener) -> None:
        self._listeners.add(listener)

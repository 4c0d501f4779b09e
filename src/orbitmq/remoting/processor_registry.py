"""ProcessorRegistry: the wiring methods servers and clients share."""

from __future__ import annotations

from orbitmq.remoting.channel_context import ChannelEventListener
from orbitmq.remoting.channel_event_listeners import ChannelEventListeners
from orbitmq.remoting.processor_table import ProcessorTable
from orbitmq.remoting.request_executor import RequestExecutor
from orbitmq.remoting.request_processor import RequestProcessor


class ProcessorRegistry:
    """Routes request codes arriving on this endpoint's connections to processors, and
    connection events to listeners. Wiring happens before serving, on one event loop."""

    def __init__(self, table: ProcessorTable | None = None) -> None:
        self.table = table or ProcessorTable()
        self._listeners = ChannelEventListeners()

    def register_processor(
        self,
        code: int,
        processor: RequestProcessor,
        executor: RequestExecutor | int | None = None,
    ) -> None:
        """Route ``code`` to ``processor``; see ``ProcessorTable.register_processor``."""
        self.table.register_processor(code, processor, executor)

    def register_default_processor(
        self, processor: RequestProcessor, executor: RequestExecutor | int | None = None
    ) -> None:
        self.table.register_default_processor(processor, executor)

    def add_listener(self, listener: ChannelEventListener) -> None:
        self._listeners.add(listener)

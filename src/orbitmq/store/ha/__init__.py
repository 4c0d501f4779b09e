"""HA log shipping: RocketMQ 4.x's master/slave replication protocol (docs/design/replication.md).

The master's ``HAService`` streams its commit log to every connected slave; a slave's
``HAClient`` appends what arrives at the same physical offsets. Plain threads and blocking
sockets: none of it runs on the broker's event loop.
"""

from orbitmq.store.ha.ha_client import HAClient
from orbitmq.store.ha.ha_codec import (
    FRAME_HEADER_SIZE,
    REPORT_SIZE,
    FrameDecoder,
    FrameError,
    ReportDecoder,
    encode_frame_header,
    encode_report,
)
from orbitmq.store.ha.ha_service import HAService

__all__ = [
    "FRAME_HEADER_SIZE",
    "REPORT_SIZE",
    "FrameDecoder",
    "FrameError",
    "HAClient",
    "HAService",
    "ReportDecoder",
    "encode_frame_header",
    "encode_report",
]

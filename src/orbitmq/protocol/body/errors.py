"""Body errors: a remoting body that is not the JSON its request or response code calls for."""

from __future__ import annotations

from orbitmq.protocol.errors import ProtocolError


class BodyError(ProtocolError):
    """A body that is not JSON, or JSON of the wrong shape.

    ``path`` names the offending value the way RocketMQ spells it on the wire, rooted at the
    body's class (``HeartbeatData.consumerDataSet[0].consumeType``); it is empty when the text
    itself is not JSON. ``reason`` is the message without the path.
    """

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.reason = reason
        self.path = path

    def within(self, segment: str) -> BodyError:
        """The same error seen from the container: ``segment`` (a member name, ``[3]`` or
        ``["key"]``) put in front of the path."""
        if not self.path:
            return BodyError(self.reason, segment)
        joiner = "" if self.path.startswith("[") else "."
        return BodyError(self.reason, f"{segment}{joiner}{self.path}")

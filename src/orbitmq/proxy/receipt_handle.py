"""The 5.x clients' receipt handle (RocketMQ 5's ``ReceiptHandle``): a POP extra info (the
broker's check point reference, with the message's queue offset) followed by the message's
commit log offset, space-separated. The broker's processors take the extra info; the
commit log offset finds the message again (forwarding it to the dead letter queue)."""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.protocol.pop_extra_info import ExtraInfo, ExtraInfoError
from orbitmq.proxy.grpc_status import GrpcProxyError
from orbitmq.proxy.v2 import definition_pb2 as d


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    """One parsed receipt handle. Immutable."""

    extra_info: ExtraInfo
    commit_log_offset: int

    @classmethod
    def decode(cls, text: str) -> ReceiptHandle:
        """GrpcProxyError INVALID_RECEIPT_HANDLE for text this endpoint did not make."""
        head, _, tail = text.rpartition(" ")
        try:
            extra = ExtraInfo.parse(head)
        except ExtraInfoError as exc:
            raise GrpcProxyError(
                d.INVALID_RECEIPT_HANDLE, f"receipt handle is not valid: {exc}"
            ) from exc
        if extra.queue_offset is None or not tail.lstrip("-").isdigit():
            raise GrpcProxyError(d.INVALID_RECEIPT_HANDLE, "receipt handle is not valid")
        return cls(extra, int(tail))

    def encode(self) -> str:
        return f"{self.extra_info} {self.commit_log_offset}"

    @property
    def queue_offset(self) -> int:
        offset = self.extra_info.queue_offset
        return -1 if offset is None else offset

    def is_expired(self, now_ms: int) -> bool:
        """Past its invisible time: the message may be with another consumer already."""
        return self.extra_info.revive_time <= now_ms

"""The 5.x clients' receipt handles as the gRPC endpoint reads them: RocketMQ 5's
``ReceiptHandle`` (``orbitmq.protocol.ReceiptHandle``: the POP extra info and the message's
commit log offset), with a malformed one answered INVALID_RECEIPT_HANDLE."""

from __future__ import annotations

from orbitmq.protocol.pop_extra_info import ExtraInfoError, ReceiptHandle
from orbitmq.proxy.grpc_status import GrpcProxyError
from orbitmq.proxy.v2 import definition_pb2 as d


def decode_receipt_handle(text: str) -> ReceiptHandle:
    """The handle in ``text``; GrpcProxyError INVALID_RECEIPT_HANDLE naming what is wrong
    for text no broker made."""
    try:
        return ReceiptHandle.decode(text)
    except ExtraInfoError as exc:
        raise GrpcProxyError(
            d.INVALID_RECEIPT_HANDLE, f"receipt handle is not valid: {exc}"
        ) from exc

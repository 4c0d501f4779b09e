"""The transaction ids the gRPC endpoint hands out: where the half message is.

A 5.x producer gets a transaction id with the send of a half message (and another with each
RecoverOrphanedTransactionCommand) and hands it back with EndTransaction. RocketMQ 5's
proxy keeps a table from that id to the half's offsets in memory; OrbitMQ writes the offsets
into the id itself, so a verdict still finds its half after a broker restart, and nothing
has to expire. The id is 32 hex digits: the half's commit log offset, then its offset in
the half queue (each 16 digits). It is opaque to the clients, which only hand it back.
Pure functions.
"""

from __future__ import annotations

from typing import Final

_DIGITS: Final = 16


def encode_transaction_id(commit_log_offset: int, tran_state_table_offset: int) -> str:
    return f"{commit_log_offset:0{_DIGITS}X}{tran_state_table_offset:0{_DIGITS}X}"


def decode_transaction_id(transaction_id: str) -> tuple[int, int] | None:
    """(commit log offset, half queue offset), or None when ``transaction_id`` is not one
    of ours."""
    text = transaction_id.strip()
    if len(text) != 2 * _DIGITS:
        return None
    try:
        return int(text[:_DIGITS], 16), int(text[_DIGITS:], 16)
    except ValueError:
        return None

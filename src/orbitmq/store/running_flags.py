"""RunningFlags: whether the store accepts writes, and why not."""

from __future__ import annotations


class RunningFlags:
    """Owns the store's write permission (RocketMQ's RunningFlags): refused while the disk
    is full (set by the clean service) or while consume queues cannot be written (set by
    dispatch, RocketMQ's WRITE_LOGICS_QUEUE_ERROR: accepting more would acknowledge
    messages no consumer can see). Unlike RocketMQ's, the logics-queue error clears itself
    once dispatch goes through again. Plain attributes, set by those services and read by
    the put path; a stale read only delays the switch by one put."""

    def __init__(self) -> None:
        self.disk_full = False
        self.disk_full_reason = ""
        self.logics_queue_error = ""

    @property
    def is_writeable(self) -> bool:
        return not self.disk_full and not self.logics_queue_error

    @property
    def refusal_reason(self) -> str:
        """Why writes are refused ("" when they are not)."""
        return "; ".join(r for r in (self.disk_full_reason, self.logics_queue_error) if r)

    def make_disk_full(self, reason: str) -> bool:
        """Mark the disk full; True if it was fine before."""
        was_ok = not self.disk_full
        self.disk_full, self.disk_full_reason = True, reason
        return was_ok

    def make_disk_ok(self) -> bool:
        """Clear the disk-full mark; True if it was set."""
        was_full = self.disk_full
        self.disk_full, self.disk_full_reason = False, ""
        return was_full

    def make_logics_queue_error(self, reason: str) -> bool:
        """Consume queues cannot be written (``reason``); True if they could before."""
        was_ok = not self.logics_queue_error
        self.logics_queue_error = reason
        return was_ok

    def clear_logics_queue_error(self) -> bool:
        """Consume queues are written again; True if they could not before."""
        was_error = bool(self.logics_queue_error)
        self.logics_queue_error = ""
        return was_error

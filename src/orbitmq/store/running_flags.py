"""RunningFlags: whether the store accepts writes, and why not."""

from __future__ import annotations


class RunningFlags:
    """Owns the store's write permission. Plain attributes, set by the clean service and
    read by the put path; a stale read only delays the switch by one put."""

    def __init__(self) -> None:
        self.disk_full = False
        self.disk_full_reason = ""

    @property
    def is_writeable(self) -> bool:
        return not self.disk_full

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

"""The process's open-file limit. A broker holds a descriptor per open store file and per
connection; RocketMQ's guides ask operators to raise ``ulimit -n`` by hand, the servers here
raise their own soft limit to the hard one (which needs no privilege)."""

from __future__ import annotations

import resource
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OpenFilesLimit:
    """RLIMIT_NOFILE before and after ``raise_open_files_limit``."""

    before: int
    after: int

    @property
    def raised(self) -> bool:
        return self.after > self.before


def raise_open_files_limit() -> OpenFilesLimit:
    """Raise the soft RLIMIT_NOFILE to the hard limit; the limits before and after.

    An unlimited hard limit is not a number a soft limit may take on every kernel (Linux caps
    it at fs.nr_open): then the soft limit goes as high as the kernel allows.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        target = _nr_open() or soft
    if soft != resource.RLIM_INFINITY and target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return OpenFilesLimit(soft, soft)
        return OpenFilesLimit(soft, target)
    return OpenFilesLimit(soft, soft)


def _nr_open() -> int | None:
    try:
        with open("/proc/sys/fs/nr_open", encoding="ascii") as file:
            return int(file.read().strip())
    except (OSError, ValueError):
        return None

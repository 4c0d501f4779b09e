"""Helpers for testing OrbitMQ and applications built on it: fault injection (and, with
later parts, an in-process cluster)."""

from orbitmq.testing.fault_file_system import FaultInjectingFileSystem
from orbitmq.testing.manual_clock import ManualClock

__all__ = ["FaultInjectingFileSystem", "ManualClock"]

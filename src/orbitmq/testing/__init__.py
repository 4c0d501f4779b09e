"""Helpers for testing OrbitMQ and applications built on it: an in-process cluster, fault
injection and a manual clock."""

from orbitmq.testing.cluster import InProcessCluster
from orbitmq.testing.fault_file_system import FaultInjectingFileSystem
from orbitmq.testing.manual_clock import ManualClock

__all__ = ["FaultInjectingFileSystem", "InProcessCluster", "ManualClock"]

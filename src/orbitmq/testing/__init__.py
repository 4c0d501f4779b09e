"""Helpers for testing OrbitMQ and applications built on it: an in-process cluster (also on a
thread of its own, for blocking code), fault injection and a manual clock."""

from orbitmq.testing.cluster import InProcessCluster
from orbitmq.testing.fault_file_system import FaultInjectingFileSystem
from orbitmq.testing.manual_clock import ManualClock
from orbitmq.testing.threaded_cluster import ThreadedCluster

__all__ = ["FaultInjectingFileSystem", "InProcessCluster", "ManualClock", "ThreadedCluster"]

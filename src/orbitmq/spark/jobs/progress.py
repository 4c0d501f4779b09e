"""Spark's task progress as a terminal progress bar while a job runs."""

from __future__ import annotations

import threading

from pyspark.sql import SparkSession
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from orbitmq.common import Lifetime

_POLL_S = 0.5


class SparkProgress(Lifetime):
    """Owns a rich progress bar and the thread that fills it from Spark's status tracker
    (tasks done of the active stages); a context manager around the job's actions, for the
    one thread that runs them."""

    def __init__(self, spark: SparkSession, description: str, console: Console) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task = self._progress.add_task(description, total=None)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="spark-progress", daemon=True)

    def step(self, description: str) -> None:
        """Name the phase the job is in."""
        self._progress.update(self._task, description=description)

    def _poll(self) -> None:
        while not self._done.wait(_POLL_S):
            total = completed = 0
            for stage_id in self._tracker.getActiveStageIds():
                info = self._tracker.getStageInfo(stage_id)
                if info is not None:
                    total += info.numTasks
                    completed += info.numCompletedTasks
            if total:
                self._progress.update(self._task, total=total, completed=completed)

    def start(self) -> None:
        self._progress.start()
        self._thread.start()

    def _stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():  # not when start failed before the thread ran
            self._thread.join()
        self._progress.stop()

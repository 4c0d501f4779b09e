"""Where exactly-once commit intents live, and what the sink refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.spark.options import OptionError, SinkOptions
from orbitmq.spark.staged_commit import INTENT_DIR, intent_dir


def options(**extra: str) -> SinkOptions:
    return SinkOptions.parse({"namesrvAddr": "h:1", "topic": "T", "exactlyOnce": "true", **extra})


def test_intents_live_beside_a_local_checkpoint(tmp_path: Path) -> None:
    assert options(checkpointLocation=str(tmp_path)).exactly_once
    assert intent_dir(options(checkpointLocation=str(tmp_path))) == tmp_path / INTENT_DIR
    assert intent_dir(options(checkpointLocation=f"file://{tmp_path}")) == tmp_path / INTENT_DIR


def test_no_checkpoint_or_a_remote_one_is_refused() -> None:
    with pytest.raises(OptionError, match="checkpointLocation"):
        intent_dir(options())
    with pytest.raises(OptionError, match="local"):
        intent_dir(options(checkpointLocation="hdfs://nn/checkpoint"))

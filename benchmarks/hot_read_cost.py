"""What a hot read costs in the store (issue 20 §4: cold reads moved off the loop must not
slow hot ones): ``MessageStore.get_message`` of 32 1 KiB messages near the head.

    PYTHONPATH=src .venv/bin/python benchmarks/hot_read_cost.py

Run from the repository root, A/B against another checkout by running it twice, alternating
(``PYTHONPATH`` decides which ``orbitmq`` is measured). Prints µs per read for 5 rounds of
20,000 reads and their minimum.
"""

from __future__ import annotations

import tempfile
import time

from orbitmq.common import MessageExtBrokerInner
from orbitmq.store import MessageStore, MessageStoreConfig

MESSAGES = 20_000


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        config = MessageStoreConfig(
            store_path_root_dir=root,
            mapped_file_size_commit_log=64 * 1024 * 1024,
            mapped_file_size_consume_queue=600_000,
            max_hash_slot_num=1000,
            max_index_num=4000,
        )
        store = MessageStore(config)
        store.load()
        store.start()
        for _ in range(MESSAGES):
            message = MessageExtBrokerInner(
                "HotRead", body=b"x" * 1024, born_host=("127.0.0.1", 1), store_host=("127.0.0.1", 2)
            )
            assert store.put_message(message).is_ok
        assert store.wait_for_dispatch()
        rounds = []
        for _ in range(5):
            began = time.perf_counter()
            for k in range(MESSAGES):
                store.get_message("g", "HotRead", 0, MESSAGES - 1000 + k % 900, 32)
            rounds.append((time.perf_counter() - began) / MESSAGES * 1e6)
        store.shutdown()
    print("us per read:", " ".join(f"{r:.2f}" for r in rounds), f"min {min(rounds):.2f}")


if __name__ == "__main__":
    main()

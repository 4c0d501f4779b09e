"""What plain ACL (aclEnable=true) costs per request, in CPU time of this process.

1. Per request, the work itself: the client signing a send (``AclClientRPCHook``: the
   extFields sorted, HMAC-SHA1 over them and the body) and the broker checking it
   (``PlainAccessValidator``: ``parse`` and ``validate``, the signature computed again and
   the topic's and group's rights looked up), for a SEND_MESSAGE_V2 with a producer's usual
   header and a 128-byte body, and for a PULL_MESSAGE.
2. End to end: a broker with ACL and one without (an ``InProcessCluster`` each, in this
   process with the client); rounds alternate between them. A round sends ``--messages``
   messages one by one with OrbitMQ's producer (signed on the ACL broker). The table gives
   the median CPU per message of each mode and the difference.

    .venv/bin/python benchmarks/acl_cost.py [--rounds N] [--messages M] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from orbitmq.broker.plain_access_validator import PlainAccessValidator
from orbitmq.broker.plain_permission_manager import PlainPermissionManager
from orbitmq.client import AclClientRPCHook, ClientConfig, Producer, SessionCredentials
from orbitmq.common import Message, MessageQueue
from orbitmq.protocol import RemotingCommand, RequestCode
from orbitmq.remoting import run
from orbitmq.testing import InProcessCluster

TOPIC = "AclBench"
PLAIN_ACL_YML = f"""\
accounts:
  - accessKey: benchUser
    secretKey: bench-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [{TOPIC}=PUB|SUB, TBW102=PUB]
"""
#: A Java producer's SendMessageRequestHeaderV2, as it reaches the broker.
SEND_FIELDS = {
    "a": "bench_pg", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0",
    "g": "1700000000000", "h": "0", "i": "UNIQ_KEY\x017F0000011F9C18B4AAC2\x02WAIT\x01true\x02",
    "j": "0", "k": "false", "m": "false",
}  # fmt: skip
PULL_FIELDS = {
    "consumerGroup": "bench_cg", "topic": TOPIC, "queueId": "0", "queueOffset": "0",
    "maxMsgNums": "32", "sysFlag": "2", "commitOffset": "0", "suspendTimeoutMillis": "0",
    "subscription": "*", "subVersion": "0", "expressionType": "TAG",
}  # fmt: skip


def per_call_ns(func: Callable[[], None], calls: int, rounds: int) -> float:
    """Median CPU ns per call of ``func`` over ``rounds`` rounds of ``calls`` calls."""
    samples = []
    for _ in range(rounds):
        start = time.process_time_ns()
        for _ in range(calls):
            func()
        samples.append((time.process_time_ns() - start) / calls)
    return statistics.median(samples)


def write_home(root: Path) -> Path:
    (root / "conf").mkdir(parents=True)
    (root / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    return root


def per_request_ns(root: Path, rounds: int) -> dict[str, float]:
    manager = PlainPermissionManager(write_home(root / "hot"))
    manager.load()
    validator = PlainAccessValidator(manager)
    hook = AclClientRPCHook(SessionCredentials("benchUser", "bench-secret"))
    results: dict[str, float] = {}
    for name, code, fields, body in (
        ("send", RequestCode.SEND_MESSAGE_V2, SEND_FIELDS, b"x" * 128),
        ("pull", RequestCode.PULL_MESSAGE, PULL_FIELDS, b""),
    ):
        request = RemotingCommand.create_request(code, dict(fields), body)
        hook.do_before_request("127.0.0.1:10911", request)
        # As the server sees it: a plain int code off the wire.
        request.code = int(code)

        def sign(request: RemotingCommand = request) -> None:
            hook.do_before_request("127.0.0.1:10911", request)

        def check(request: RemotingCommand = request) -> None:
            validator.do_before_request("127.0.0.1:50000", request)

        results[f"{name}: client signs"] = per_call_ns(sign, 20_000, rounds)
        results[f"{name}: broker checks"] = per_call_ns(check, 20_000, rounds)
    return results


async def one_round(cluster: InProcessCluster, config: ClientConfig, messages: int) -> float:
    """CPU seconds to send ``messages`` one by one."""
    queue = MessageQueue(TOPIC, "broker-a", 0)
    async with Producer("bench_pg", client_config=config) as producer:
        await producer.send(Message(TOPIC, b"warm-up"), queue=queue)
        begin = time.process_time()
        for i in range(messages):
            await producer.send(Message(TOPIC, b"m%08d" % i), queue=queue)
        return time.process_time() - begin


async def end_to_end(root: Path, rounds: int, messages: int) -> dict[str, Any]:
    on_settings = {"acl_enable": True, "rocketmq_home": str(write_home(root / "home"))}
    async with (
        InProcessCluster(root / "on", broker_settings=on_settings) as on,
        InProcessCluster(root / "off") as off,
    ):
        configs = {
            "on": lambda: ClientConfig(
                namesrv_addr=on.namesrv_addr, access_key="benchUser", secret_key="bench-secret"
            ),
            "off": lambda: ClientConfig(namesrv_addr=off.namesrv_addr),
        }
        clusters = {"on": on, "off": off}
        samples: dict[str, list[float]] = {"on": [], "off": []}
        for seq in range(rounds):
            for name in ("on", "off") if seq % 2 == 0 else ("off", "on"):
                seconds = await one_round(clusters[name], configs[name](), messages)
                samples[name].append(seconds / messages * 1e6)
    on_us, off_us = statistics.median(samples["on"]), statistics.median(samples["off"])
    return {
        "on us/msg": on_us,
        "off us/msg": off_us,
        "added us/msg": on_us - off_us,
        "on spread": [min(samples["on"]), max(samples["on"])],
        "off spread": [min(samples["off"]), max(samples["off"])],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        hot = per_request_ns(root, args.rounds)
        e2e = run(end_to_end(root, args.rounds, args.messages))
    table = Table(title="Plain ACL cost (CPU, median of rounds)")
    table.add_column("measure")
    table.add_column("ACL on", justify="right")
    table.add_column("ACL off", justify="right")
    table.add_column("added", justify="right")
    for name, ns in hot.items():
        table.add_row(f"per request, {name}", f"{ns / 1000:.1f} us", "0", f"{ns / 1000:.1f} us")
    table.add_row(
        "send one by one, end to end, per message",
        f"{e2e['on us/msg']:.1f} us",
        f"{e2e['off us/msg']:.1f} us",
        f"{e2e['added us/msg']:+.1f} us",
    )
    Console().print(table)
    print(
        f"end-to-end spread (min..max us/msg): on {e2e['on spread'][0]:.1f}.."
        f"{e2e['on spread'][1]:.1f}, off {e2e['off spread'][0]:.1f}..{e2e['off spread'][1]:.1f}"
    )
    if args.json:
        args.json.write_text(json.dumps({"per_request_ns": hot, "end_to_end": e2e}, indent=2))


if __name__ == "__main__":
    main()

"""CPU per request of the remoting layer alone: a ``RemotingServer`` whose processor answers
at once and a ``RemotingClient``, both in this process on one event loop (uvloop when
installed, as ``orbitmq start`` runs), over a real TCP connection on 127.0.0.1.

The client sends ``--burst`` requests at once (HEART_BEAT with two extFields, no body) and
waits for all answers, ``--bursts`` times after a warm-up; the table gives the CPU
microseconds of this process per request (client and server together: framing, JSON
headers, dispatch, tasks, socket I/O), the median of ``--rounds`` rounds. It is what every
request type pays before its processor's own work (a POP consumer's ack per message pays it
once per message, a pull once per 32).

    .venv/bin/python benchmarks/remoting_round_trip.py [--burst B] [--bursts N] [--rounds R]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import ChannelContext, RemotingClient, RemotingServer
from orbitmq.remoting.event_loop import run


class Answer:
    """Answers every request SUCCESS at once."""

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)


async def measure(burst: int, bursts: int, rounds: int) -> list[float]:
    server = RemotingServer("127.0.0.1", 0)
    server.table.register_processor(RequestCode.HEART_BEAT, Answer())
    await server.start()
    client = RemotingClient()
    addr = f"127.0.0.1:{server.port}"

    async def one_burst() -> None:
        await asyncio.gather(
            *(
                client.invoke(
                    addr,
                    RemotingCommand.create_request(
                        RequestCode.HEART_BEAT, {"clientID": "bench", "n": str(i)}
                    ),
                    10.0,
                )
                for i in range(burst)
            )
        )

    try:
        for _ in range(max(bursts // 10, 10)):
            await one_burst()
        results = []
        for _ in range(rounds):
            began = time.process_time()
            for _ in range(bursts):
                await one_burst()
            results.append((time.process_time() - began) / (burst * bursts) * 1e6)
        return results
    finally:
        await client.close()
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=32)
    parser.add_argument("--bursts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rounds = run(measure(args.burst, args.bursts, args.rounds))
    result = {"burst": args.burst, "cpu_us_per_request": statistics.median(rounds)}
    print(f"{'measure':<24} value")
    print(f"{'burst':<24} {args.burst}")
    print(f"{'cpu_us_per_request':<24} {result['cpu_us_per_request']:.2f}")
    print(f"{'rounds':<24} {' '.join(f'{r:.2f}' for r in rounds)}")
    if args.json:
        args.json.write_text(json.dumps(result | {"rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()

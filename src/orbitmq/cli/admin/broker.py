"""mqadmin's broker commands that need no broker-side admin code beyond sends:
sendMsgStatus (brokerStatus, getBrokerConfig, updateBrokerConfig, brokerConsumeStats and
cleanExpiredCQ join them once the broker serves their request codes)."""

from __future__ import annotations

import click

from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.admin.send_rt import CLI_PRODUCER_GROUP, summary, timed_sends
from orbitmq.cli.session import Session, session_options
from orbitmq.client import Producer

COMMANDS = CommandRegistry("Broker")


@COMMANDS.command("sendMsgStatus")
@click.option("-b", "--brokerName", "broker", required=True, help="Broker name.")
@click.option("-s", "--messageSize", "size", type=click.IntRange(1), default=128, show_default=True)
@click.option("-c", "--count", type=click.IntRange(1), default=50, show_default=True)
@session_options
def send_msg_status(session: Session, broker: str, size: int, count: int) -> None:
    """Time sends to the topic named after a broker (each broker serves one)."""

    async def measure() -> dict[str, object]:
        async with Producer(CLI_PRODUCER_GROUP, client_config=session.client_config()) as producer:
            with session.out.progress(f"sending to {broker}", count) as advance:
                sends = await timed_sends(producer, broker, count, size, advance)
        return {"brokerName": broker, **summary(sends)}

    session.out.record(session.run(measure()))

"""mqadmin's message commands: queryMsgById, queryMsgByKey, queryMsgByUniqueKey,
queryMsgByOffset, printMsg, consumeMessage, sendMessage, checkMsgSendRT, and
queryMsgTraceById (from :mod:`orbitmq.cli.admin.trace`)."""

from __future__ import annotations

from typing import Final

import click

from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.admin.send_rt import CLI_PRODUCER_GROUP, summary, timed_sends
from orbitmq.cli.admin.trace import query_msg_trace_by_id
from orbitmq.cli.console import fail
from orbitmq.cli.message_view import ROW_COLUMNS, message_record, message_row
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import FORMS
from orbitmq.client import (
    AdminClient,
    MessageTrack,
    MQClientError,
    Producer,
    QueueReader,
    ScanRange,
    scan_messages,
)
from orbitmq.common import SUB_ALL, Message, MessageExt, MessageQueue

COMMANDS = CommandRegistry("Message")

#: mqadmin queryMsgByKey's default maxNum (RocketMQ 5).
DEFAULT_MAX_NUM: Final = 64
#: consumeMessage's default count (mqadmin's messageCount).
DEFAULT_CONSUME_COUNT: Final = 128


def print_message(
    session: Session, message: MessageExt, tracks: list[MessageTrack] | None = None
) -> None:
    """The message's fields, then, when ``tracks`` is given, what became of it for each
    group consuming its topic (mqadmin's rows: CONSUMED, NOT_CONSUME_YET, NOT_ONLINE ...)."""
    record = message_record(message)
    if tracks is None:
        session.out.record(record, title=f"message {message.msg_id}")
        return
    consumed_by = [
        {"consumerGroup": t.consumer_group, "trackType": t.track_type.value,
         "exceptionDesc": t.exception_desc}
        for t in tracks
    ]  # fmt: skip
    if session.out.as_json:
        session.out.data({**record, "consumedBy": consumed_by})
        return
    session.out.record(record, title=f"message {message.msg_id}")
    session.out.table(
        ("consumerGroup", "trackType", "exceptionDesc"),
        [list(t.values()) for t in consumed_by],
        title="consumed by" if tracks else "WARN: No Consumer",
    )


async def with_tracks(
    admin: AdminClient, message: MessageExt
) -> tuple[MessageExt, list[MessageTrack]]:
    """The message and its track for each group consuming its topic."""
    return message, await admin.message_track_detail(message)


def print_rows(session: Session, messages: list[MessageExt], *, body: bool) -> None:
    columns = (*ROW_COLUMNS, "body") if body else ROW_COLUMNS
    session.out.table(columns, [list(message_row(m, body=body).values()) for m in messages])


async def message_at(session: Session, mq: MessageQueue, offset: int) -> MessageExt:
    """The message stored at ``offset`` of ``mq``."""
    async with QueueReader(client_config=session.client_config()) as reader:
        async for batch in reader.read(mq, offset, offset + 1):
            return batch[0]
    raise MQClientError(
        f"no message at offset {offset} of {mq.topic} {mq.broker_name}:{mq.queue_id}"
    )


@COMMANDS.command("queryMsgById")
@click.option(
    "-i", "--msgId", "msg_id", required=True, help="Offset message id (or unique id with -t)."
)
@click.option("-t", "--topic", help="The topic: lets a unique id be looked up too.")
@session_options
def query_msg_by_id(session: Session, msg_id: str, topic: str | None) -> None:
    """A message by its offset message id (where it is stored), with all its fields."""

    async def find(admin: AdminClient) -> tuple[MessageExt, list[MessageTrack]]:
        return await with_tracks(admin, await admin.view_message(msg_id, topic))

    print_message(session, *session.admin(find))


@COMMANDS.command("queryMsgByUniqueKey")
@click.option("-i", "--msgId", "msg_id", required=True, help="Unique id (SendResult's msgId).")
@click.option("-t", "--topic", required=True, help="Topic.")
@session_options
def query_msg_by_unique_key(session: Session, msg_id: str, topic: str) -> None:
    """A message by the unique id its producer gave it, looked up in the topic's index."""

    async def find(admin: AdminClient) -> tuple[MessageExt, list[MessageTrack]]:
        return await with_tracks(admin, await admin.query_message_by_unique_id(topic, msg_id))

    print_message(session, *session.admin(find))


@COMMANDS.command("queryMsgByKey")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-k", "--msgKey", "key", required=True, help="Message key.")
@click.option("-b", "--beginTimestamp", "begin", help=f"Stored from ({FORMS}); default 0.")
@click.option("-e", "--endTimestamp", "end", help=f"Stored until ({FORMS}); default now.")
@click.option(
    "-m", "--maxNum", "max_num", type=click.IntRange(1), default=DEFAULT_MAX_NUM, show_default=True
)
@session_options
def query_msg_by_key(
    session: Session, topic: str, key: str, begin: str | None, end: str | None, max_num: int
) -> None:
    """Messages with a key, from the brokers' index, oldest first."""
    begin_ms = 0 if begin is None else session.timestamp_ms(begin, "-b/--beginTimestamp")
    end_ms = None if end is None else session.timestamp_ms(end, "-e/--endTimestamp")
    found = session.admin(
        lambda admin: admin.query_messages_by_key(topic, key, max_num, begin_ms, end_ms)
    )
    print_rows(session, found, body=False)


@COMMANDS.command("queryMsgByOffset")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-b", "--brokerName", "broker", required=True, help="Broker name.")
@click.option("-i", "--queueId", "queue_id", type=int, required=True, help="Queue id.")
@click.option("-o", "--offset", type=int, required=True, help="Queue offset.")
@session_options
def query_msg_by_offset(
    session: Session, topic: str, broker: str, queue_id: int, offset: int
) -> None:
    """The message at an offset of a queue."""
    mq = MessageQueue(topic, broker, queue_id)

    async def find(admin: AdminClient) -> tuple[MessageExt, list[MessageTrack]]:
        return await with_tracks(admin, await message_at(session, mq, offset))

    print_message(session, *session.admin(find))


def scan_to_rows(
    session: Session, topic: str, scan: ScanRange, limit: int | None, body: bool
) -> None:
    """Read what ``scan`` selects and print it as rows, a progress bar counting messages."""

    async def read() -> list[MessageExt]:
        found: list[MessageExt] = []
        with session.out.progress(f"reading {topic}", limit) as advance:
            async with QueueReader(client_config=session.client_config()) as reader:
                async for message in scan_messages(reader, topic, scan, limit):
                    found.append(message)
                    advance()
        return found

    print_rows(session, session.run(read()), body=body)


@COMMANDS.command("printMsg")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option(
    "-s", "--subExpression", "expression", default=SUB_ALL, help="Tags, e.g. 'TagA || TagB'."
)
@click.option("-b", "--beginTimestamp", "begin", help=f"Stored from ({FORMS}).")
@click.option("-e", "--endTimestamp", "end", help=f"Stored until ({FORMS}).")
@click.option("-d", "--printBody", "body", type=click.BOOL, default=True, show_default=True)
@session_options
def print_msg(
    session: Session, topic: str, expression: str, begin: str | None, end: str | None, body: bool
) -> None:
    """Every message of a topic stored in a time range (all when no range), queue by queue."""
    scan = ScanRange(
        begin_ms=None if begin is None else session.timestamp_ms(begin, "-b/--beginTimestamp"),
        end_ms=None if end is None else session.timestamp_ms(end, "-e/--endTimestamp"),
        subscription=expression,
    )
    scan_to_rows(session, topic, scan, None, body)


@COMMANDS.command("consumeMessage")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-b", "--brokerName", "broker", help="Only this broker's queues.")
@click.option("-i", "--queueId", "queue_id", type=int, help="Only this queue (with -b).")
@click.option("-o", "--offset", type=click.IntRange(0), help="Start at this queue offset.")
@click.option("-s", "--beginTimestamp", "begin", help=f"Start at this store time ({FORMS}).")
@click.option("-e", "--endTimestamp", "end", help=f"Stop at this store time ({FORMS}).")
@click.option(
    "-c",
    "--MessageNumber",
    "count",
    type=click.IntRange(1),
    default=DEFAULT_CONSUME_COUNT,
    show_default=True,
)
@session_options
def consume_message(
    session: Session,
    topic: str,
    broker: str | None,
    queue_id: int | None,
    offset: int | None,
    begin: str | None,
    end: str | None,
    count: int,
) -> None:
    """Read messages of a topic by offset or time, without committing anything."""
    if queue_id is not None and broker is None:
        fail("consumeMessage: -i/--queueId needs -b/--brokerName")
    scan = ScanRange(
        broker_name=broker,
        queue_id=queue_id,
        start_offset=offset,
        begin_ms=None if begin is None else session.timestamp_ms(begin, "-s/--beginTimestamp"),
        end_ms=None if end is None else session.timestamp_ms(end, "-e/--endTimestamp"),
    )
    scan_to_rows(session, topic, scan, count, True)


@COMMANDS.command("sendMessage")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-p", "--body", required=True, help="The body, as UTF-8 text.")
@click.option("-k", "--key", help="Message keys, space separated.")
@click.option("-c", "--tags", help="Message tag.")
@click.option("-b", "--broker", help="To this broker (with -i).")
@click.option("-i", "--qid", type=int, help="To this queue of the broker.")
@session_options
def send_message(
    session: Session, topic: str, body: str, key: str | None, tags: str | None,
    broker: str | None, qid: int | None,
) -> None:  # fmt: skip
    """Send one message."""
    if (broker is None) != (qid is None):
        fail("sendMessage: -b/--broker and -i/--qid go together")
    message = Message(topic, body.encode())
    if key:
        message.keys = key.split()
    message.tags = tags
    queue = MessageQueue(topic, broker, qid) if broker is not None and qid is not None else None

    async def send() -> dict[str, object]:
        async with Producer(CLI_PRODUCER_GROUP, client_config=session.client_config()) as producer:
            result = await producer.send(message, queue=queue)
        mq = result.message_queue
        return {
            "brokerName": mq.broker_name,
            "queueId": mq.queue_id,
            "queueOffset": result.queue_offset,
            "sendStatus": result.send_status.name,
            "msgId": result.msg_id,
            "offsetMsgId": result.offset_msg_id,
        }

    session.out.record(session.run(send()))


@COMMANDS.command("checkMsgSendRT")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-a", "--amount", type=click.IntRange(1), default=100, show_default=True)
@click.option(
    "-s", "--size", type=click.IntRange(1), default=128, show_default=True, help="Body bytes."
)
@session_options
def check_msg_send_rt(session: Session, topic: str, amount: int, size: int) -> None:
    """Send messages one by one and time each round trip."""

    async def measure() -> list[dict[str, object]]:
        async with Producer(CLI_PRODUCER_GROUP, client_config=session.client_config()) as producer:
            with session.out.progress(f"sending to {topic}", amount) as advance:
                sends = await timed_sends(producer, topic, amount, size, advance)
        return [s.row() for s in sends] + [{"brokerName": "*", **summary(sends)}]

    rows = session.run(measure())
    if session.out.as_json:
        session.out.data({"sends": rows[:-1], "summary": rows[-1]})
        return
    session.out.table(
        ("brokerName", "queueId", "sendResult", "rtMs"), [list(r.values()) for r in rows[:-1]]
    )
    session.out.record(rows[-1], title="summary")


COMMANDS.add(query_msg_trace_by_id)

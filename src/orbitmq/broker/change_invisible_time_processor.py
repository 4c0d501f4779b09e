"""``ChangeInvisibleTimeProcessor``: CHANGE_MESSAGE_INVISIBLETIME (200053) — a popped message
stays invisible for a new span from now (RocketMQ 5's ``ChangeInvisibleTimeProcessor``).

For a normal POP the broker writes a new check point for the one message (popped now, for
the new invisible time) and acks it in its old check point; the answer's pop time, invisible
time and revive queue make the message's new extra info (``ExtraInfo.changed``). For FIFO
POP the queue's order info keeps the message's next visible time. A message no longer
invisible (acked, or revived already) is answered NO_MESSAGE: giving it a new check point
would bring it back.
"""

from __future__ import annotations

from typing import Final

from orbitmq.broker.ack_message_processor import AckMessageProcessor, AckRefusedError
from orbitmq.broker.pop_check_point import AckMsg, PopCheckPoint, revive_record
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.header import (
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
)
from orbitmq.protocol.pop_extra_info import ExtraInfo
from orbitmq.protocol.processor_codes import CHANGE_INVISIBLE_TIME_CODES
from orbitmq.remoting import ChannelContext


class ChangeInvisibleTimeProcessor:
    """Answers CHANGE_MESSAGE_INVISIBLETIME with the ack processor's checks and state. Use
    from the broker's event loop only."""

    REQUEST_CODES: Final = CHANGE_INVISIBLE_TIME_CODES

    def __init__(self, acks: AckMessageProcessor) -> None:
        self.acks = acks

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = ChangeInvisibleTimeRequestHeader.from_ext_fields(request.ext_fields)
        acks = self.acks
        try:
            if header.invisible_time < 0:
                raise AckRefusedError(
                    ResponseCode.INVALID_PARAMETER,
                    f"invisibleTime {header.invisible_time} is negative",
                )
            extra = acks.parse_extra_info(header.extra_info)
            topic = acks.check_queue(header.consumer_group, header.topic, header.queue_id, extra)
            high = acks.store.get_max_offset_in_queue(topic, header.queue_id)
            if header.offset >= high:
                raise AckRefusedError(ResponseCode.NO_MESSAGE, f"offset {header.offset} >= {high}")
            acks.check_offset(topic, header.queue_id, header.offset, ResponseCode.NO_MESSAGE)
            if extra.is_order:
                answer = self._change_orderly(header, topic, extra)
            else:
                answer = await self._change(header, topic, extra)
        except AckRefusedError as refused:
            return RemotingCommand.create_response(request, refused.code, refused.remark)
        return RemotingCommand.create_success(request, answer)

    def _change_orderly(
        self, header: ChangeInvisibleTimeRequestHeader, topic: str, extra: ExtraInfo
    ) -> ChangeInvisibleTimeResponseHeader:
        acks = self.acks
        group, queue_id = header.consumer_group, header.queue_id
        old = acks.consumer_offset_manager.query_offset(group, topic, queue_id)
        next_visible = acks.clock.now_ms() + header.invisible_time
        if header.offset >= old:
            acks.order_info_manager.update_next_visible_time(
                topic, group, queue_id, header.offset, extra.pop_time, next_visible
            )
        return ChangeInvisibleTimeResponseHeader(
            pop_time=extra.pop_time,
            invisible_time=next_visible - extra.pop_time,
            revive_qid=extra.revive_qid,
        )

    async def _change(
        self, header: ChangeInvisibleTimeRequestHeader, topic: str, extra: ExtraInfo
    ) -> ChangeInvisibleTimeResponseHeader:
        acks = self.acks
        group, queue_id, offset = header.consumer_group, header.queue_id, header.offset
        revive = acks.revive_service
        old_ck = revive.find((group, topic, queue_id, extra.ck_queue_offset, extra.pop_time))
        index = old_ck.index_of(offset) if old_ck is not None else -1
        if old_ck is None or index < 0 or old_ck.bit_map >> index & 1:
            raise AckRefusedError(
                ResponseCode.NO_MESSAGE,
                f"the message {topic}@{queue_id}:{offset} is not invisible any more "
                "(acked, or its invisible time is over): pop it again",
            )
        now = acks.clock.now_ms()
        ck = PopCheckPoint(
            start_offset=offset,
            pop_time=now,
            invisible_time=header.invisible_time,
            queue_id=queue_id,
            topic=topic,
            cid=group,
            queue_offset_diff=[0],
            broker_name=extra.broker_name,
        )
        # Both in memory first (no await between): the revive loop sees one or the other.
        revive.add_check_point(ck, extra.revive_qid)
        ack = AckMsg(group, topic, queue_id, extra.ck_queue_offset, extra.pop_time, [offset])
        ack.broker_name = extra.broker_name
        revive.ack(ack)
        host, store = acks.store.commit_log.store_host, acks.store
        for record in (ck, ack):
            msg = revive_record(revive.revive_topic, extra.revive_qid, record, host, now)
            result = await store.async_put_message(msg)
            if not result.is_ok:
                raise AckRefusedError(
                    ResponseCode.SYSTEM_ERROR, f"revive log write failed: {result.status.name}"
                )
        return ChangeInvisibleTimeResponseHeader(
            pop_time=now, invisible_time=header.invisible_time, revive_qid=extra.revive_qid
        )

"""What a dead letter's resend carries (pure: no broker), and where a listing says it came
from."""

from __future__ import annotations

from orbitmq.client.dead_letters import original_topic, resend_message, resend_unique_key
from orbitmq.common import MessageExt
from orbitmq.common import message_const as mc
from orbitmq.common.topic import dlq_topic

DLQ_ID = "7F00000100002A9F0000000000001234"


def dead_letter(**properties: str) -> MessageExt:
    return MessageExt(
        dlq_topic("cg"), b"payload", 3, dict(properties), msg_id=DLQ_ID, reconsume_times=2
    )


def test_a_resend_keeps_body_flag_keys_tags_and_user_properties_only() -> None:
    dead = dead_letter(
        KEYS="k1 k2",
        TAGS="TagA",
        color="red",
        RETRY_TOPIC="Orders",
        ORIGIN_MESSAGE_ID="0A0000010000000000000000000000FF",
        UNIQ_KEY="AC1100000001000000000000000000AA",
        REAL_TOPIC="%RETRY%cg",
        REAL_QID="0",
        DELAY="3",
        TRAN_MSG="true",
        PGROUP="pg",
        MAX_OFFSET="9",
        MIN_OFFSET="0",
        CONSUME_START_TIME="1",
        RECONSUME_TIME="2",
        MAX_RECONSUME_TIMES="16",
        WAIT="true",
    )
    msg = resend_message(dead)
    assert (msg.topic, msg.body, msg.flag) == ("Orders", b"payload", 3)
    assert msg.properties == {
        "KEYS": "k1 k2",
        "TAGS": "TagA",
        "color": "red",
        mc.PROPERTY_DLQ_ORIGIN_MESSAGE_ID: DLQ_ID,
        mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: resend_unique_key(DLQ_ID),
    }


def test_the_resend_unique_key_is_fixed_per_dead_letter_and_shaped_as_an_id() -> None:
    key = resend_unique_key(DLQ_ID)
    assert key == resend_unique_key(DLQ_ID) != resend_unique_key(DLQ_ID[:-1] + "5")
    assert len(key) == 32 and key == key.upper()
    int(key, 16)


def test_the_original_topic_is_retry_topic_else_real_topic_else_its_own() -> None:
    assert original_topic(dead_letter(RETRY_TOPIC="A", REAL_TOPIC="B")) == "A"
    assert original_topic(dead_letter(REAL_TOPIC="B")) == "B"
    assert original_topic(dead_letter()) == dlq_topic("cg")

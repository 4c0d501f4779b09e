"""RocketMQ's message property keys and separators (``MessageConst``).

The names on the wire and on disk are RocketMQ's, character for character: clients of any
language read and write these keys.
"""

from __future__ import annotations

from typing import Final

PROPERTY_KEYS: Final = "KEYS"
PROPERTY_TAGS: Final = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK: Final = "WAIT"
PROPERTY_DELAY_TIME_LEVEL: Final = "DELAY"
PROPERTY_RETRY_TOPIC: Final = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC: Final = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID: Final = "REAL_QID"
PROPERTY_TRANSACTION_PREPARED: Final = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP: Final = "PGROUP"
PROPERTY_MIN_OFFSET: Final = "MIN_OFFSET"
PROPERTY_MAX_OFFSET: Final = "MAX_OFFSET"
PROPERTY_BUYER_ID: Final = "BUYER_ID"
PROPERTY_ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
PROPERTY_TRANSFER_FLAG: Final = "TRANSFER_FLAG"
PROPERTY_CORRECTION_FLAG: Final = "CORRECTION_FLAG"
PROPERTY_MQ2_FLAG: Final = "MQ2_FLAG"
PROPERTY_RECONSUME_TIME: Final = "RECONSUME_TIME"
PROPERTY_MSG_REGION: Final = "MSG_REGION"
#: The region a broker names when none is configured, and a client assumes when a send
#: answer names none (RocketMQ's ``MixAll.DEFAULT_TRACE_REGION_ID``).
DEFAULT_TRACE_REGION_ID: Final = "DefaultRegion"
PROPERTY_TRACE_SWITCH: Final = "TRACE_ON"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: Final = "UNIQ_KEY"
PROPERTY_EXTEND_UNIQ_INFO: Final = "EXTEND_UNIQ_INFO"
PROPERTY_MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
PROPERTY_CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
PROPERTY_TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROPERTY_INSTANCE_ID: Final = "INSTANCE_ID"
PROPERTY_CORRELATION_ID: Final = "CORRELATION_ID"
PROPERTY_MESSAGE_REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
PROPERTY_MESSAGE_TTL: Final = "TTL"
PROPERTY_REPLY_MESSAGE_ARRIVE_TIME: Final = "ARRIVE_TIME"
PROPERTY_PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
PROPERTY_CLUSTER: Final = "CLUSTER"
PROPERTY_MESSAGE_TYPE: Final = "MSG_TYPE"
PROPERTY_POP_CK: Final = "POP_CK"
PROPERTY_FIRST_POP_TIME: Final = "1ST_POP_TIME"
PROPERTY_SHARDING_KEY: Final = "__SHARDINGKEY"
PROPERTY_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
PROPERTY_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
PROPERTY_TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
#: On a timer message: its due time in ms, set by the broker at intake (RocketMQ 5 rounds it
#: down to timerPrecisionMs; OrbitMQ keeps it exact, so delivery is never early).
PROPERTY_TIMER_OUT_MS: Final = "TIMER_OUT_MS"
#: On a delivered timer message: when it entered the time wheel, and when it left it.
PROPERTY_TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
PROPERTY_TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"
PROPERTY_TIMER_ROLL_TIMES: Final = "TIMER_ROLL_TIMES"
PROPERTY_TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"
PROPERTY_TIMER_DELAY_LEVEL: Final = "TIMER_DELAY_LEVEL"
#: On a message resent from a dead letter queue: the dead letter's offset message id
#: (RocketMQ 5's name for the DLQ origin it records).
PROPERTY_DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
#: OrbitMQ's own: on a half message staged from a batch send, how many messages its body
#: (a batch encoding) holds; a commit stores them as that batch.
PROPERTY_HALF_BATCH: Final = "ORBITMQ_HALF_BATCH"
#: On the op message of a half that the check-back put back: the queue offset of its new
#: copy in the half topic, so that a verdict naming the old copy reaches the new one.
PROPERTY_PUT_BACK_TO: Final = "ORBITMQ_PUT_BACK_TO"
#: On the op message of a half the check-back discarded after transactionCheckMax checks:
#: a late commit may still make it visible (once), as RocketMQ's brokers let it.
PROPERTY_TRANSACTION_DISCARDED: Final = "ORBITMQ_DISCARDED"

#: The properties clients and brokers set, as opposed to a user's own (RocketMQ's
#: ``MessageConst.STRING_HASH_SET``): every key above.
STRING_HASH_SET: Final[frozenset[str]] = frozenset(
    value
    for name, value in dict(globals()).items()
    if name.startswith("PROPERTY_") and isinstance(value, str)
)

#: Separates several keys inside the KEYS property.
KEY_SEPARATOR: Final = " "
#: Between a property's name and its value in the stored property string.
NAME_VALUE_SEPARATOR: Final = "\u0001"
#: After every name/value pair in the stored property string.
PROPERTY_SEPARATOR: Final = "\u0002"

"""What every part of OrbitMQ shares: the message model, RocketMQ's constants, the stored
record layout and codec, RocketMQ's CRC32, message ids, the clock and
file-system seams, config files, the Service base, lifetimes and loop threads, and the error root.

A fact two parts need off the wire (topic names and their validation, property keys, message
flags) has its one home here; the wire's own facts live in ``orbitmq.protocol``
(docs/design/layers.md)."""

from orbitmq.common.clock import SYSTEM_CLOCK, Clock, SystemClock
from orbitmq.common.config_file import ConfigFile
from orbitmq.common.crc32 import crc32
from orbitmq.common.delay_level import (
    DEFAULT_DELAY_LEVELS_MS,
    DEFAULT_MESSAGE_DELAY_LEVEL,
    parse_delay_levels,
)
from orbitmq.common.errors import ConfigError, MessageFormatError, OrbitError
from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem, OsFileSystem
from orbitmq.common.java_hash import java_string_hash, java_string_hash_with_prefix
from orbitmq.common.lifetime import AsyncLifetime, Lifetime
from orbitmq.common.loop_thread import LoopThread
from orbitmq.common.message import (
    Message,
    MessageExt,
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageQueue,
    SocketAddress,
)
from orbitmq.common.message_decoder import (
    count_batch_messages,
    decode_batch_messages,
    decode_message,
    decode_messages,
    encode_batch_message,
    encode_batch_messages,
    encode_message,
    message_properties_to_string,
    string_to_message_properties,
)
from orbitmq.common.message_id import (
    UniqueIdGenerator,
    create_message_id,
    decode_message_id,
    is_message_id_shaped,
)
from orbitmq.common.record_layout import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, calc_msg_length
from orbitmq.common.service import Service
from orbitmq.common.socket_address import is_ipv6, pack_socket_address, unpack_socket_address
from orbitmq.common.subscription import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    SUB_ALL,
    TOOLS_CONSUMER_GROUP,
)
from orbitmq.common.topic import topic_problem
from orbitmq.common.topic_attributes import TopicAttributeError, parse_attributes_modification
from orbitmq.common.topic_message_type import (
    TopicMessageType,
    message_type_of,
    send_type_problem,
)

__all__ = [
    "BLANK_MAGIC_CODE",
    "DEFAULT_DELAY_LEVELS_MS",
    "DEFAULT_MESSAGE_DELAY_LEVEL",
    "EXPRESSION_TYPE_SQL92",
    "EXPRESSION_TYPE_TAG",
    "MESSAGE_MAGIC_CODE",
    "OS_FILE_SYSTEM",
    "SUB_ALL",
    "SYSTEM_CLOCK",
    "TOOLS_CONSUMER_GROUP",
    "AsyncLifetime",
    "Clock",
    "ConfigError",
    "ConfigFile",
    "FileSystem",
    "Lifetime",
    "LoopThread",
    "Message",
    "MessageExt",
    "MessageExtBatch",
    "MessageExtBrokerInner",
    "MessageFormatError",
    "MessageQueue",
    "OrbitError",
    "OsFileSystem",
    "Service",
    "SocketAddress",
    "SystemClock",
    "TopicAttributeError",
    "TopicMessageType",
    "UniqueIdGenerator",
    "calc_msg_length",
    "count_batch_messages",
    "crc32",
    "create_message_id",
    "decode_batch_messages",
    "decode_message",
    "decode_message_id",
    "decode_messages",
    "encode_batch_message",
    "encode_batch_messages",
    "encode_message",
    "is_ipv6",
    "is_message_id_shaped",
    "java_string_hash",
    "java_string_hash_with_prefix",
    "message_properties_to_string",
    "message_type_of",
    "pack_socket_address",
    "parse_attributes_modification",
    "parse_delay_levels",
    "send_type_problem",
    "string_to_message_properties",
    "topic_problem",
    "unpack_socket_address",
]

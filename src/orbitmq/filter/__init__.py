"""Message filtering shared by the broker and the client: tag expressions parsed into tags and
their hash codes, and the consume-queue tag filter; SQL92 expressions parsed once into
compiled evaluators, and the commit-log filter that applies them to stored records."""

from orbitmq.filter.java_values import JavaType, Sql92EvaluationError
from orbitmq.filter.sql92_expression import Sql92Expression
from orbitmq.filter.sql92_message_filter import (
    FilterLookup,
    PropertyPicker,
    RetrySql92MessageFilter,
    Sql92MessageFilter,
    is_retry_topic,
    record_properties_bytes,
)
from orbitmq.filter.sql92_parser import Sql92ParseError, parse_sql92
from orbitmq.filter.tag_filter import (
    SubscriptionData,
    SubscriptionParseError,
    TagMessageFilter,
    build_subscription,
    build_subscription_data,
    is_tag_type,
)

__all__ = [
    "FilterLookup",
    "JavaType",
    "PropertyPicker",
    "RetrySql92MessageFilter",
    "Sql92EvaluationError",
    "Sql92Expression",
    "Sql92MessageFilter",
    "Sql92ParseError",
    "SubscriptionData",
    "SubscriptionParseError",
    "TagMessageFilter",
    "build_subscription",
    "build_subscription_data",
    "is_retry_topic",
    "is_tag_type",
    "parse_sql92",
    "record_properties_bytes",
]

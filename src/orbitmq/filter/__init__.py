"""Message filtering shared by the broker and the client: tag expressions parsed into tags and
their hash codes, and the consume-queue tag filter."""

from orbitmq.filter.tag_filter import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    SUB_ALL,
    SubscriptionData,
    SubscriptionParseError,
    TagMessageFilter,
    build_subscription,
    build_subscription_data,
    is_tag_type,
)

__all__ = [
    "EXPRESSION_TYPE_SQL92",
    "EXPRESSION_TYPE_TAG",
    "SUB_ALL",
    "SubscriptionData",
    "SubscriptionParseError",
    "TagMessageFilter",
    "build_subscription",
    "build_subscription_data",
    "is_tag_type",
]

"""Message filtering shared by the broker and the client: tag expressions parsed into tags and
their hash codes, and the consume-queue tag filter."""

from orbitmq.filter.tag_filter import (
    SubscriptionData,
    SubscriptionParseError,
    TagMessageFilter,
    build_subscription,
    build_subscription_data,
    is_tag_type,
)

__all__ = [
    "SubscriptionData",
    "SubscriptionParseError",
    "TagMessageFilter",
    "build_subscription",
    "build_subscription_data",
    "is_tag_type",
]

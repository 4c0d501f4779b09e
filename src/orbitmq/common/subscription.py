"""Names a consumer subscribes with, shared by the wire, the filter, the broker and the
client: RocketMQ's ``SubscriptionData.SUB_ALL``, ``ExpressionType`` and
``MixAll.TOOLS_CONSUMER_GROUP``."""

from __future__ import annotations

from typing import Final

#: The subscription expression that takes every tag (and messages without one).
SUB_ALL: Final = "*"
#: ``SubscriptionData.expressionType`` as clients name it (``ExpressionType``).
EXPRESSION_TYPE_TAG: Final = "TAG"
EXPRESSION_TYPE_SQL92: Final = "SQL92"
#: The group tools read under (mqadmin's queue readers): the broker creates it whenever it is
#: asked for, and nothing is committed or registered for it.
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"

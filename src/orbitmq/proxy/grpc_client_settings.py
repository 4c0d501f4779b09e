"""``GrpcClientSettingsManager``: each 5.x client's settings, as it declared them on its
Telemetry stream, and the settings the server answers with (RocketMQ 5's proxy class of that
name, with its ProxyConfig defaults).

A client opens Telemetry and sends its Settings first (client type, access point, the topics
it publishes or the group and subscriptions it consumes, its user agent); the server
answers with the same Settings completed by its own values:

- a producer: a backoff policy of 3 attempts, exponential from 10 ms to 1 s, times 2
  (``grpcClientProducer*``), ``validate_message_type`` and ``max_body_size`` (the store's
  maxMessageSize, 4 MiB by default). ``validate_message_type`` makes a client refuse to send
  a message of another type than its topic's: it is on only where topics carry their type
  (the ``message.type`` attribute) and the broker checks it (enableTopicMessageTypeCheck), or
  a client would refuse every transactional, FIFO or delay message to an untyped topic;
- a consumer: ``receive_batch_size`` 32, ``long_polling_timeout`` 20 s, ``fifo`` from the
  group's consumeMessageOrderly, a backoff policy of the group's retryMaxTimes + 1 attempts
  with the customized delays 1 s, 5 s, 10 s, 30 s, 1-10 min, 20 min, 30 min, 1 h, 2 h (the
  default GroupRetryPolicy of RocketMQ 5: CUSTOMIZED, the delay levels from level 3 on);
- ``metric`` off (no collector: clients export nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from google.protobuf.duration_pb2 import Duration

from orbitmq.protocol.body.subscription_group import SubscriptionGroupConfig
from orbitmq.proxy.v2 import definition_pb2 as definition

PRODUCER_MAX_ATTEMPTS: Final = 3
PRODUCER_BACKOFF_INITIAL_MS: Final = 10
PRODUCER_BACKOFF_MAX_MS: Final = 1000
PRODUCER_BACKOFF_MULTIPLIER: Final = 2
CONSUMER_LONG_POLLING_BATCH_SIZE: Final = 32
CONSUMER_MAX_LONG_POLLING_TIMEOUT_MS: Final = 20_000
#: CustomizedRetryPolicy's default delays, in seconds.
CONSUMER_RETRY_DELAYS_S: Final = (
    1,
    5,
    10,
    30,
    *(60 * m for m in range(1, 11)),
    1200,
    1800,
    3600,
    7200,
)

GroupLookup = Callable[[str], SubscriptionGroupConfig | None]


def _duration(ms: int) -> Duration:
    duration = Duration()
    duration.FromMilliseconds(ms)
    return duration


def _exponential(initial_ms: int, max_ms: int, multiplier: float) -> Any:
    return definition.ExponentialBackoff(
        initial=_duration(initial_ms), max=_duration(max_ms), multiplier=multiplier
    )


class GrpcClientSettingsManager:
    """Owns the table client id -> the Settings it declared. Use from the broker's event
    loop only."""

    def __init__(
        self,
        max_message_size: Callable[[], int],
        find_group: GroupLookup,
        *,
        validate_message_type: Callable[[], bool] = lambda: True,
    ) -> None:
        self._settings: dict[str, Any] = {}
        self._max_message_size = max_message_size
        self._find_group = find_group
        self._validate_message_type = validate_message_type

    def update_client_settings(self, client_id: str, settings: Any) -> None:
        self._settings[client_id] = settings

    def get_raw_client_settings(self, client_id: str) -> Any | None:
        return self._settings.get(client_id)

    def remove_client_settings(self, client_id: str) -> Any | None:
        return self._settings.pop(client_id, None)

    def get_client_settings(self, client_id: str) -> Any | None:
        """The client's settings completed with the server's values; None when the client
        has declared none."""
        raw = self._settings.get(client_id)
        return None if raw is None else self.merge(raw)

    def merge(self, raw: Any) -> Any:
        settings = definition.Settings()
        settings.CopyFrom(raw)
        if settings.HasField("publishing"):
            self._merge_producer(settings)
        elif settings.HasField("subscription"):
            self._merge_consumer(settings)
        settings.metric.CopyFrom(definition.Metric(on=False))
        return settings

    def _merge_producer(self, settings: Any) -> None:
        settings.backoff_policy.CopyFrom(
            definition.RetryPolicy(
                max_attempts=PRODUCER_MAX_ATTEMPTS,
                exponential_backoff=_exponential(
                    PRODUCER_BACKOFF_INITIAL_MS,
                    PRODUCER_BACKOFF_MAX_MS,
                    PRODUCER_BACKOFF_MULTIPLIER,
                ),
            )
        )
        settings.publishing.validate_message_type = self._validate_message_type()
        settings.publishing.max_body_size = self._max_message_size()

    def _merge_consumer(self, settings: Any) -> None:
        subscription = settings.subscription
        group = self._find_group(subscription.group.name) if subscription.group.name else None
        config = group if group is not None else SubscriptionGroupConfig()
        subscription.receive_batch_size = CONSUMER_LONG_POLLING_BATCH_SIZE
        subscription.long_polling_timeout.CopyFrom(_duration(CONSUMER_MAX_LONG_POLLING_TIMEOUT_MS))
        subscription.fifo = bool(getattr(config, "consume_message_orderly", False))
        settings.backoff_policy.CopyFrom(
            definition.RetryPolicy(
                max_attempts=config.retry_max_times + 1,
                customized_backoff=definition.CustomizedBackoff(
                    next=[_duration(s * 1000) for s in CONSUMER_RETRY_DELAYS_S]
                ),
            )
        )

"""OrbitMQ: a message queue in Python that follows Apache RocketMQ's design and wire protocols.

The client API, for ``from orbitmq import Producer, Message``: the asyncio clients and the
types their calls take and return. The blocking facades of the same names are in
``orbitmq.sync``; everything else stays in its subpackage (``orbitmq.client``,
``orbitmq.testing``, ...).

The subpackages and the direction their imports may point are described in the README and
enforced by the import-linter contracts in pyproject.toml. This root module sits above every
layer and no subpackage imports from it.

The names are loaded on first use (PEP 562 ``__getattr__``), not when the package is: every
``import orbitmq.<anything>`` runs this module first, and importing the client here would
load the client, remoting and filter stacks into servers, the CLI and Spark workers that
never use them (it doubled ``import orbitmq.common``), and would turn any future
``from orbitmq import ...`` inside a subpackage into an import cycle.

Before any subpackage loads, this module decides whether the mypyc-compiled hot path runs
(``orbitmq._compiled``: ``ORBITMQ_PURE=1`` or a stale build runs the Python source);
:func:`compiled_modules` says what was chosen.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from orbitmq import _compiled

if TYPE_CHECKING:
    from orbitmq.client import (
        AdminClient,
        ClientConfig,
        ConsumeContext,
        ConsumeResult,
        LitePullConsumer,
        LitePullConsumerConfig,
        MessageQueueSelector,
        MQBrokerError,
        MQClientError,
        Producer,
        ProducerConfig,
        PushConsumer,
        PushConsumerConfig,
        SendResult,
        SendStatus,
    )
    from orbitmq.common import Message, MessageExt, MessageQueue, OrbitError

__version__ = "0.1.0"

# First, so that every compiled module loads compiled or from source as decided.
_compiled.install()

#: Each public name and the subpackage that defines it.
_EXPORTS: dict[str, str] = {
    "AdminClient": "orbitmq.client",
    "ClientConfig": "orbitmq.client",
    "ConsumeContext": "orbitmq.client",
    "ConsumeResult": "orbitmq.client",
    "LitePullConsumer": "orbitmq.client",
    "LitePullConsumerConfig": "orbitmq.client",
    "MQBrokerError": "orbitmq.client",
    "MQClientError": "orbitmq.client",
    "MessageQueueSelector": "orbitmq.client",
    "Producer": "orbitmq.client",
    "ProducerConfig": "orbitmq.client",
    "PushConsumer": "orbitmq.client",
    "PushConsumerConfig": "orbitmq.client",
    "SendResult": "orbitmq.client",
    "SendStatus": "orbitmq.client",
    "Message": "orbitmq.common",
    "MessageExt": "orbitmq.common",
    "MessageQueue": "orbitmq.common",
    "OrbitError": "orbitmq.common",
}

__all__ = [
    "AdminClient",
    "ClientConfig",
    "ConsumeContext",
    "ConsumeResult",
    "LitePullConsumer",
    "LitePullConsumerConfig",
    "MQBrokerError",
    "MQClientError",
    "Message",
    "MessageExt",
    "MessageQueue",
    "MessageQueueSelector",
    "OrbitError",
    "Producer",
    "ProducerConfig",
    "PushConsumer",
    "PushConsumerConfig",
    "SendResult",
    "SendStatus",
    "__version__",
    "compiled_modules",
]


def compiled_modules() -> tuple[str, ...]:
    """The modules this process runs compiled by mypyc; empty when it runs pure Python."""
    return _compiled.state().compiled


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})

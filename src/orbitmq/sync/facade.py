"""The bases of the blocking facades: a facade owns one asyncio client and the loop thread it
runs on, and carries each call to that loop, waiting for the answer (bounded). A group's
facade adds the group and its settings; a consumer's, what every consumer of a group has."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Final, Generic, ParamSpec, Protocol, TypeVar, cast

from orbitmq.client import ClientConfig, MQClientError
from orbitmq.client.rebalancing_consumer import RebalancingConsumer
from orbitmq.common import Lifetime, LoopThread
from orbitmq.filter import SubscriptionData
from orbitmq.remoting import new_event_loop

T = TypeVar("T")
P = ParamSpec("P")

#: How long a facade waits for calls that carry no timeout of their own (start, shutdown,
#: admin operations). Each network request inside is bounded by the client's own timeouts;
#: this bound only keeps a caller from waiting for ever on a wedged loop.
DEFAULT_CALL_TIMEOUT_S: Final = 30.0
#: Added to a send's (or poll's) own timeout when waiting for it: the call ends on the loop
#: first, and its answer still has to cross to the waiting thread.
GRACE_S: Final = 1.0
_TIMEOUT: Final = "timeout_s"


class _AsyncClient(Protocol):
    """What every wrapped asyncio client has: a lifetime."""

    async def start(self) -> None: ...

    async def shutdown(self) -> None: ...


C = TypeVar("C", bound=_AsyncClient)
OwnerT = TypeVar("OwnerT")


class Facade(Lifetime, Generic[C]):
    """Owns one asyncio client and the loop thread it runs on; the lifetime shared by the
    facades (``with`` starts and shuts down). Safe from several threads."""

    def __init__(
        self, factory: Callable[[], C], *, thread_name: str, what: str, call_timeout_s: float
    ) -> None:
        self._call_timeout_s = call_timeout_s
        self._runner = LoopThread(
            thread_name, what, loop_factory=new_event_loop, error=MQClientError
        )
        self._client: C = self._runner.build(factory, call_timeout_s)

    def _call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        return self._runner.call(coro, self._call_timeout_s if timeout_s is None else timeout_s)

    def _apply(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._call(_apply(function, *args, **kwargs))

    def start(self) -> None:
        self._call(self._client.start())

    def shutdown(self) -> None:
        """Shut the client down, then stop its loop and join its thread. Idempotent; from
        several threads at once, the others wait for the first."""
        self._runner.close(self._client.shutdown(), self._call_timeout_s)

    def _stop(self) -> None:
        self.shutdown()


async def _apply(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    # On the loop: configuration calls mutate state its tasks iterate (subscriptions that
    # heartbeats read, the hook lists that sends walk), so they must not race them.
    return function(*args, **kwargs)


def blocking(
    method: Callable[Concatenate[C, P], Coroutine[Any, Any, T]],
    *,
    wait_s: Callable[[Any, float | None], float] | None = None,
) -> Callable[Concatenate[Facade[C], P], T]:
    """The facade's method for the client's coroutine method ``method``: the same
    parameters and docstring (so the two cannot drift), waited for at most the facade's
    call timeout, or ``wait_s(facade, the call's timeout_s)`` for a method with a timeout
    of its own (keyword-only, so that it is found among the keywords)."""
    timeout = inspect.signature(method).parameters.get(_TIMEOUT)
    if wait_s is not None and timeout and timeout.kind is not inspect.Parameter.KEYWORD_ONLY:
        raise TypeError(f"{method.__qualname__}: {_TIMEOUT} is not keyword-only")

    def call(self: Facade[C], /, *args: P.args, **kwargs: P.kwargs) -> T:
        coro = method(self._client, *args, **kwargs)
        if wait_s is None:
            return self._call(coro)
        # Keyword-only (checked above), so it is among the keywords when given.
        own = cast("float | None", kwargs.get(_TIMEOUT))
        return self._call(coro, wait_s(self, own))

    functools.update_wrapper(call, method)
    return call


def applied(
    method: Callable[Concatenate[OwnerT, P], T],
) -> Callable[Concatenate[Facade[Any], P], T]:
    """The facade's method for the client's plain method ``method`` (configuration and
    state reads): the same parameters and docstring, run on the loop (``Facade._apply``).
    ``method`` may come from a base class of the client that has no lifetime of its own
    (``RebalancingConsumer``), hence its owner's unbounded type."""

    def call(self: Facade[Any], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._apply(method, self._client, *args, **kwargs)

    functools.update_wrapper(call, method)
    return call


K = TypeVar("K")
K_contra = TypeVar("K_contra", contravariant=True)
G_co = TypeVar("G_co", covariant=True)


class _GroupClient(_AsyncClient, Protocol[K]):
    """A client of a producer or consumer group, with its settings."""

    group: str
    config: K


G = TypeVar("G", bound=_GroupClient[Any])


class _GroupClientType(Protocol[G_co, K_contra]):
    """The constructor of a group's asyncio client."""

    def __call__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = ...,
        client_config: ClientConfig | None = ...,
        config: K_contra | None = ...,
    ) -> G_co: ...


class GroupFacade(Facade[G], Generic[G, K]):
    """A facade over a producer's or consumer's client: built with that client's arguments,
    and showing its group and settings. A subclass names the client class and what its
    thread and errors call it."""

    _client_type: _GroupClientType[G, K]
    #: The loop thread's name, before the group's: "orbitmq-sync-producer-<group>".
    _thread_name: str
    #: How errors name it, before the group's: "producer <group>".
    _what: str

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: K | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        client_type = self._client_type
        super().__init__(
            lambda: client_type(
                group, namesrv_addr=namesrv_addr, client_config=client_config, config=config
            ),
            thread_name=f"{self._thread_name}-{group}",
            what=f"{self._what} {group}",
            call_timeout_s=call_timeout_s,
        )

    @property
    def group(self) -> str:
        return self._client.group

    @property
    def config(self) -> K:
        # G's bound cannot name K (a bound takes no type variables): the subclass pairs them.
        config: K = self._client.config
        return config


class _RebalancingClient(_GroupClient[K], Protocol[K]):
    """A consumer of a group whose queues are rebalanced (``RebalancingConsumer``)."""

    @property
    def subscriptions(self) -> dict[str, SubscriptionData]: ...


R = TypeVar("R", bound=_RebalancingClient[Any])


class RebalancingConsumerFacade(GroupFacade[R, K]):
    """A facade over a push or lite pull consumer: the blocking side of what their
    ``RebalancingConsumer`` base offers. Subclasses add their consumer's own methods."""

    unsubscribe = applied(RebalancingConsumer.unsubscribe)
    register_message_filter = applied(RebalancingConsumer.register_message_filter)
    register_consume_hook = applied(RebalancingConsumer.register_consume_hook)
    subscribed_topics = applied(RebalancingConsumer.subscribed_topics)
    rebalance_now = applied(RebalancingConsumer.rebalance_now)

    @property
    def subscriptions(self) -> dict[str, SubscriptionData]:
        """A copy, taken on the loop: topic -> its subscription."""
        return self._apply(dict, self._client.subscriptions)

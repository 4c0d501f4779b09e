"""The blocking ``AdminClient``."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar, overload

from orbitmq.client import AclAdmin, BrokerAdmin, ClientConfig, GroupAdmin
from orbitmq.client import AdminClient as AsyncAdminClient
from orbitmq.sync.facade import DEFAULT_CALL_TIMEOUT_S, Facade, blocking

P = ParamSpec("P")
T = TypeVar("T")


@overload
def _admin(
    method: Callable[Concatenate[GroupAdmin, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[AsyncAdminClient, P], Coroutine[Any, Any, T]]: ...
@overload
def _admin(
    method: Callable[Concatenate[BrokerAdmin, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[AsyncAdminClient, P], Coroutine[Any, Any, T]]: ...
@overload
def _admin(
    method: Callable[Concatenate[AclAdmin, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[AsyncAdminClient, P], Coroutine[Any, Any, T]]: ...
def _admin(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[AsyncAdminClient, P], Coroutine[Any, Any, T]]:
    """A mixin's method (``GroupAdmin``, ``BrokerAdmin``, ``AclAdmin``) as one of
    ``AdminClient``, which is all three, so the facade wraps it for the admin client it
    owns."""
    return method


class AdminClient(Facade[AsyncAdminClient]):
    """Blocking ``orbitmq.client.AdminClient``: owns that admin client (connections, route
    cache) and its loop thread. Safe from several threads; calls run concurrently. Its
    methods are the asyncio client's, waited for at most ``call_timeout_s``."""

    def __init__(
        self,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        super().__init__(
            lambda: AsyncAdminClient(namesrv_addr=namesrv_addr, client_config=client_config),
            thread_name="orbitmq-sync-admin",
            what="admin client",
            call_timeout_s=call_timeout_s,
        )

    cluster_info = blocking(AsyncAdminClient.cluster_info)
    master_addrs = blocking(AsyncAdminClient.master_addrs)
    topic_route = blocking(AsyncAdminClient.topic_route)
    list_topics = blocking(AsyncAdminClient.list_topics)
    create_topic = blocking(AsyncAdminClient.create_topic)
    delete_topic = blocking(AsyncAdminClient.delete_topic)
    topic_status = blocking(AsyncAdminClient.topic_status)
    topic_configs = blocking(_admin(AsyncAdminClient.topic_configs))
    consumer_progress = blocking(AsyncAdminClient.consumer_progress)
    consumer_ids = blocking(AsyncAdminClient.consumer_ids)
    group_get_nums = blocking(_admin(AsyncAdminClient.group_get_nums))
    reset_offset_by_timestamp = blocking(AsyncAdminClient.reset_offset_by_timestamp)
    view_message = blocking(AsyncAdminClient.view_message)
    query_messages_by_key = blocking(AsyncAdminClient.query_messages_by_key)
    query_message_by_unique_id = blocking(AsyncAdminClient.query_message_by_unique_id)
    query_msg_trace_by_id = blocking(AsyncAdminClient.query_msg_trace_by_id)
    dead_letters = blocking(AsyncAdminClient.dead_letters)
    resend_dead_letters = blocking(AsyncAdminClient.resend_dead_letters)
    update_subscription_group = blocking(_admin(AsyncAdminClient.update_subscription_group))
    delete_subscription_group = blocking(_admin(AsyncAdminClient.delete_subscription_group))
    consumer_connection = blocking(_admin(AsyncAdminClient.consumer_connection))
    producer_connection = blocking(_admin(AsyncAdminClient.producer_connection))
    query_topic_consume_by_who = blocking(_admin(AsyncAdminClient.query_topic_consume_by_who))
    consumer_running_info = blocking(_admin(AsyncAdminClient.consumer_running_info))
    consume_message_directly = blocking(_admin(AsyncAdminClient.consume_message_directly))
    message_track_detail = blocking(_admin(AsyncAdminClient.message_track_detail))
    namesrv_config = blocking(_admin(AsyncAdminClient.namesrv_config))
    update_namesrv_config = blocking(_admin(AsyncAdminClient.update_namesrv_config))
    wipe_write_perm = blocking(_admin(AsyncAdminClient.wipe_write_perm))
    add_write_perm = blocking(_admin(AsyncAdminClient.add_write_perm))
    put_kv_config = blocking(_admin(AsyncAdminClient.put_kv_config))
    delete_kv_config = blocking(_admin(AsyncAdminClient.delete_kv_config))
    get_kv_config = blocking(_admin(AsyncAdminClient.get_kv_config))
    broker_config = blocking(_admin(AsyncAdminClient.broker_config))
    update_broker_config = blocking(_admin(AsyncAdminClient.update_broker_config))
    broker_runtime_info = blocking(_admin(AsyncAdminClient.broker_runtime_info))
    view_stats = blocking(_admin(AsyncAdminClient.view_stats))
    broker_consume_stats = blocking(_admin(AsyncAdminClient.broker_consume_stats))
    clean_expired_cq = blocking(_admin(AsyncAdminClient.clean_expired_cq))
    query_cq = blocking(_admin(AsyncAdminClient.query_cq))
    update_cold_data_flow_ctr_group_config = blocking(
        _admin(AsyncAdminClient.update_cold_data_flow_ctr_group_config)
    )
    remove_cold_data_flow_ctr_group_config = blocking(
        _admin(AsyncAdminClient.remove_cold_data_flow_ctr_group_config)
    )
    cold_data_flow_ctr_info = blocking(_admin(AsyncAdminClient.cold_data_flow_ctr_info))
    set_commit_log_read_ahead_mode = blocking(
        _admin(AsyncAdminClient.set_commit_log_read_ahead_mode)
    )
    update_acl_config = blocking(_admin(AsyncAdminClient.update_acl_config))
    delete_acl_config = blocking(_admin(AsyncAdminClient.delete_acl_config))
    update_global_white_addrs = blocking(_admin(AsyncAdminClient.update_global_white_addrs))
    cluster_acl_config_version = blocking(_admin(AsyncAdminClient.cluster_acl_config_version))
    acl_config = blocking(_admin(AsyncAdminClient.acl_config))

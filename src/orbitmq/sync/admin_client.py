"""The blocking ``AdminClient``."""

from __future__ import annotations

from orbitmq.client import AdminClient as AsyncAdminClient
from orbitmq.client import ClientConfig
from orbitmq.sync.facade import DEFAULT_CALL_TIMEOUT_S, Facade, blocking


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
    consumer_progress = blocking(AsyncAdminClient.consumer_progress)
    consumer_ids = blocking(AsyncAdminClient.consumer_ids)
    reset_offset_by_timestamp = blocking(AsyncAdminClient.reset_offset_by_timestamp)
    view_message = blocking(AsyncAdminClient.view_message)
    query_messages_by_key = blocking(AsyncAdminClient.query_messages_by_key)
    query_message_by_unique_id = blocking(AsyncAdminClient.query_message_by_unique_id)
    query_msg_trace_by_id = blocking(AsyncAdminClient.query_msg_trace_by_id)
    dead_letters = blocking(AsyncAdminClient.dead_letters)
    resend_dead_letters = blocking(AsyncAdminClient.resend_dead_letters)

"""``KVConfigProcessor``: PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG and
GET_KVLIST_BY_NAMESPACE (the KV half of RocketMQ's ``DefaultRequestProcessor``)."""

from __future__ import annotations

from typing import Final

from orbitmq.namesrv.kv_config_manager import KVConfigManager
from orbitmq.protocol import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    PutKVConfigRequestHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
)
from orbitmq.protocol.processor_codes import KV_CONFIG_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor


class KVConfigProcessor(CodeDispatchingProcessor):
    """Answers the KV configuration codes. Owns no state (the table is the thread-safe
    ``KVConfigManager``'s), so requests may run concurrently."""

    REQUEST_CODES: Final = KV_CONFIG_CODES

    def __init__(self, kv_config: KVConfigManager) -> None:
        self._kv_config = kv_config
        super().__init__(
            {
                RequestCode.PUT_KV_CONFIG: self._put,
                RequestCode.GET_KV_CONFIG: self._get,
                RequestCode.DELETE_KV_CONFIG: self._delete,
                RequestCode.GET_KVLIST_BY_NAMESPACE: self._list,
            }
        )

    async def _put(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        header = PutKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self._kv_config.put_kv_config(header.namespace, header.key, header.value)
        return RemotingCommand.create_success(request)

    async def _get(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        header = GetKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        value = self._kv_config.get_kv_config(header.namespace, header.key)
        if value is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {header.namespace} Key: {header.key}",
            )
        return RemotingCommand.create_success(
            request,
            header=GetKVConfigResponseHeader(value=value),
        )

    async def _delete(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        header = DeleteKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self._kv_config.delete_kv_config(header.namespace, header.key)
        return RemotingCommand.create_success(request)

    async def _list(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader.from_ext_fields(request.ext_fields)
        table = self._kv_config.get_kv_list_by_namespace(header.namespace)
        if table is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {header.namespace}",
            )
        return RemotingCommand.create_success(request, body=table.to_json())

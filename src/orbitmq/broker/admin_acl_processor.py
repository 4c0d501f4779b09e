"""``AdminAclProcessor``: the plain ACL admin requests (served by RocketMQ's
``AdminBrokerProcessor``; mqadmin's updateAclConfig, deleteAclConfig,
clusterAclConfigVersion, updateGlobalWhiteAddr and 4.9.4's getAccessConfigSubCommand):

- UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
  (53): edit the yml files, as RocketMQ does, answering SUCCESS or their own failure code
  with the reason;
- GET_BROKER_CLUSTER_ACL_INFO (52): the data versions; GET_BROKER_CLUSTER_ACL_CONFIG (54):
  every account and white address (the body of RocketMQ 4.9.4).

With aclEnable=false there is no manager: the edits fail with their codes and the queries
answer SYSTEM_ERROR, each saying ACL is off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import orjson

from orbitmq.broker.plain_permission_manager import PlainPermissionManager
from orbitmq.common.errors import ConfigError
from orbitmq.protocol import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from orbitmq.protocol.processor_codes import ADMIN_ACL_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor

log = logging.getLogger(__name__)

ACL_OFF_REMARK: Final = "The broker does not enable acl (aclEnable=false)"


def _split(text: str | None) -> list[str] | None:
    """``UtilAll.split(text, ",")``: None stays None, empty items are dropped."""
    if text is None:
        return None
    return [item.strip() for item in text.split(",") if item.strip()]


class AdminAclProcessor(CodeDispatchingProcessor):
    """Answers the ACL admin codes over one ``PlainPermissionManager`` (None: ACL off).
    Event-loop confined; the manager serialises the file edits."""

    REQUEST_CODES: Final = ADMIN_ACL_CODES

    def __init__(
        self,
        manager: PlainPermissionManager | None,
        broker_name: str,
        cluster_name: str,
        broker_addr: Callable[[], str],
    ) -> None:
        super().__init__(
            {
                RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_access_config,
                RequestCode.DELETE_ACL_CONFIG: self.delete_access_config,
                RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.get_acl_config_version,
                RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white_addrs,
                RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: self.get_acl_config,
            }
        )
        self.manager = manager
        self.broker_name = broker_name
        self.cluster_name = cluster_name
        self.broker_addr = broker_addr

    async def update_access_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = CreateAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        failed = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        if self.manager is None:
            return RemotingCommand.create_response(request, failed, ACL_OFF_REMARK)
        log.info(
            "updateAndCreateAccessConfig %s called by %s", header.access_key, ctx.remote_address
        )
        update = {
            "accessKey": header.access_key,
            "secretKey": header.secret_key,
            "whiteRemoteAddress": header.white_remote_address,
            "admin": header.admin,
            "defaultTopicPerm": header.default_topic_perm,
            "defaultGroupPerm": header.default_group_perm,
            "topicPerms": _split(header.topic_perms),
            "groupPerms": _split(header.group_perms),
        }
        try:
            await self.manager.update_access_config(update)
        except (ConfigError, OSError) as exc:
            return RemotingCommand.create_response(request, failed, str(exc))
        return RemotingCommand.create_success(request)

    async def delete_access_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = DeleteAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        failed = ResponseCode.DELETE_ACL_CONFIG_FAILED
        if self.manager is None:
            return RemotingCommand.create_response(request, failed, ACL_OFF_REMARK)
        log.info("DeleteAccessConfig %s called by %s", header.access_key, ctx.remote_address)
        try:
            deleted = await self.manager.delete_access_config(header.access_key)
        except (ConfigError, OSError) as exc:
            return RemotingCommand.create_response(request, failed, str(exc))
        if not deleted:
            remark = (
                f"The accesskey[{header.access_key}] corresponding to accessConfig has been "
                "deleted failed."
            )
            return RemotingCommand.create_response(request, failed, remark)
        return RemotingCommand.create_success(request)

    async def update_global_white_addrs(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = UpdateGlobalWhiteAddrsConfigRequestHeader.from_ext_fields(request.ext_fields)
        failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        if self.manager is None:
            return RemotingCommand.create_response(request, failed, ACL_OFF_REMARK)
        addresses = _split(header.global_white_addrs) or []
        try:
            updated = await self.manager.update_global_white_addrs(
                addresses, header.acl_file_full_path
            )
        except (ConfigError, OSError) as exc:
            return RemotingCommand.create_response(request, failed, str(exc))
        if not updated:
            remark = (
                f"The globalWhiteAddresses[{header.global_white_addrs}] has been updated failed."
            )
            return RemotingCommand.create_response(request, failed, remark)
        return RemotingCommand.create_success(request)

    async def get_acl_config_version(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        if self.manager is None:
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, ACL_OFF_REMARK
            )
        header = GetBrokerAclConfigResponseHeader(
            version=self.manager.config_version(),
            all_acl_file_version=self.manager.all_config_versions(),
            broker_name=self.broker_name,
            broker_addr=self.broker_addr(),
            cluster_name=self.cluster_name,
        )
        return RemotingCommand.create_success(request, header)

    async def get_acl_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        if self.manager is None:
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, ACL_OFF_REMARK
            )
        body = orjson.dumps(self.manager.all_acl_config())
        return RemotingCommand.create_success(request, body=body)

"""``AdminColdDataProcessor``: RocketMQ 5's cold data flow control requests of
``AdminBrokerProcessor``:

- UPDATE_COLD_DATA_FLOW_CTR_CONFIG (2001): body ``group=threshold`` properties, the admin's
  thresholds (bytes per 5 s window) for those groups;
- REMOVE_COLD_DATA_FLOW_CTR_CONFIG (2002): body a group name, whose admin threshold goes;
- GET_COLD_DATA_FLOW_CTR_INFO (2003): JSON body, every group's cold reads in the window
  (runtimeTable), the thresholds (configTable, cgColdReadThreshold, globalColdReadThreshold)
  and the global count (globalAcc);
- SET_COMMITLOG_READ_MODE (2004): ext field READ_AHEAD_MODE, 0 (MADV_NORMAL: read-ahead) or
  1 (MADV_RANDOM: none), applied to every commit log file (dataReadAheadEnable).
"""

from __future__ import annotations

import asyncio
import logging
import mmap
from typing import Final

from orbitmq.broker.cold_data_cg_ctr_service import ColdDataCgCtrService
from orbitmq.common.java_properties import parse_properties
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import SetCommitLogReadModeRequestHeader
from orbitmq.protocol.header.errors import HeaderError
from orbitmq.protocol.processor_codes import ADMIN_COLD_DATA_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import MessageStore

log = logging.getLogger(__name__)

#: SET_COMMITLOG_READ_MODE's two values, Linux's madvise advice (RocketMQ's ``LibC``).
MADV_NORMAL: Final = mmap.MADV_NORMAL
MADV_RANDOM: Final = mmap.MADV_RANDOM


class AdminColdDataProcessor(CodeDispatchingProcessor):
    """Reads and changes the ``ColdDataCgCtrService``'s tables and the commit log's read
    mode. Event-loop confined (the madvise calls run on a worker thread)."""

    REQUEST_CODES: Final = ADMIN_COLD_DATA_CODES

    def __init__(self, cold_data_cg_ctr_service: ColdDataCgCtrService, store: MessageStore):
        super().__init__(
            {
                RequestCode.UPDATE_COLD_DATA_FLOW_CTR_CONFIG: self.update_cold_data_flow_ctr_config,
                RequestCode.REMOVE_COLD_DATA_FLOW_CTR_CONFIG: self.remove_cold_data_flow_ctr_config,
                RequestCode.GET_COLD_DATA_FLOW_CTR_INFO: self.get_cold_data_flow_ctr_info,
                RequestCode.SET_COMMITLOG_READ_MODE: self.set_commit_log_read_mode,
            }
        )
        self.service = cold_data_cg_ctr_service
        self.store = store

    async def update_cold_data_flow_ctr_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        log.info("updateColdDataFlowCtrGroupConfig called by %s", ctx.remote_address)
        if request.body:
            properties = parse_properties(bytes(request.body).decode("utf-8"))
            log.info("updateColdDataFlowCtrGroupConfig new config: %s", properties)
            for group, value in properties.items():
                try:
                    self.service.add_or_update_group_config(group, int(value))
                except ValueError:
                    # RocketMQ logs a bad entry and applies the others.
                    log.error(
                        "updateColdDataFlowCtrGroupConfig properties on entry error, "
                        "key: %s, val: %s",
                        group,
                        value,
                    )
        return RemotingCommand.create_success(request)

    async def remove_cold_data_flow_ctr_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        if request.body:
            group = bytes(request.body).decode("utf-8")
            log.info("removeColdDataFlowCtrGroupConfig, consumerGroup: %s", group)
            self.service.remove_group_config(group)
        return RemotingCommand.create_success(request)

    async def get_cold_data_flow_ctr_info(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        return RemotingCommand.create_success(
            request, body=self.service.get_cold_data_flow_ctr_info()
        )

    async def set_commit_log_read_mode(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        log.info("setCommitLogReadaheadMode called by %s", ctx.remote_address)
        try:
            mode = SetCommitLogReadModeRequestHeader.from_ext_fields(
                request.ext_fields
            ).read_ahead_mode
        except HeaderError:
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, "set commitlog readahead mode failed"
            )
        if mode not in (MADV_NORMAL, MADV_RANDOM):
            return RemotingCommand.create_response(
                request,
                ResponseCode.INVALID_PARAMETER,
                "set commitlog readahead mode param value error",
            )
        self.store.config.data_read_ahead_enable = mode == MADV_NORMAL
        try:
            await asyncio.to_thread(self.store.commit_log.mapped_file_queue.set_read_mode, mode)
        except OSError:
            log.exception("set commitlog readahead mode failed")
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, "set commitlog readahead mode failed"
            )
        return RemotingCommand.create_response(
            request, ResponseCode.SUCCESS, f"set commitlog readahead mode success, mode: {mode}"
        )

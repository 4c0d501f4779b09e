"""``NamesrvConfigProcessor``: GET_NAMESRV_CONFIG (319) and UPDATE_NAMESRV_CONFIG (318), the
name server's own settings as properties text (RocketMQ's ``DefaultRequestProcessor``
getConfig / updateConfig over its ``Configuration``)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from pathlib import Path
from typing import Final

from orbitmq.common.config_binding import bind_properties, config_properties
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import format_properties, parse_properties
from orbitmq.namesrv.namesrv_config import NamesrvConfig
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.processor_codes import NAMESRV_CONFIG_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor

log = logging.getLogger(__name__)


class NamesrvConfigProcessor(CodeDispatchingProcessor):
    """Owns the changes to one ``NamesrvConfig`` and the file they are saved to
    (``config_store_path``). An update is all or nothing: every key is converted before any
    is set; then the whole configuration is written (a temporary file renamed over the old
    one). Changes are serialized by an asyncio lock; use from the server's event loop.

    Keys are applied to the config object; the parts of the server that read a key only at
    start (its port, its scan interval) use the new value after a restart.
    """

    REQUEST_CODES: Final = NAMESRV_CONFIG_CODES

    def __init__(self, config: NamesrvConfig) -> None:
        self._config = config
        self._lock = asyncio.Lock()
        super().__init__(
            {
                RequestCode.UPDATE_NAMESRV_CONFIG: self._update,
                RequestCode.GET_NAMESRV_CONFIG: self._get,
            }
        )

    def properties_text(self) -> str:
        """Every setting as ``key=value`` lines (RocketMQ's getAllConfigsFormatString)."""
        return format_properties(config_properties([self._config]))

    async def _get(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.create_success(request, body=self.properties_text().encode())

    async def _update(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        log.info("updateConfig called by %s", ctx.remote_address)
        if not request.body:
            return RemotingCommand.create_success(request)
        try:
            properties = parse_properties(request.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, "string2Properties error"
            )
        black_list = {k for k in self._config.config_black_list.split(";") if k}
        if black_list & properties.keys():
            return RemotingCommand.create_response(
                request, ResponseCode.NO_PERMISSION, "Can not update config in black list."
            )
        async with self._lock:
            candidate = dataclasses.replace(self._config)
            try:
                unknown = bind_properties(properties, [candidate])
            except ConfigError as exc:
                return RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
            if unknown:
                # RocketMQ merges only keys that exist; the others are dropped the same way.
                log.warning("updateConfig: unknown keys ignored: %s", ", ".join(unknown))
            for f in dataclasses.fields(candidate):
                setattr(self._config, f.name, getattr(candidate, f.name))
            await asyncio.to_thread(self._persist, self.properties_text())
        log.info("name server config updated: %s", properties)
        return RemotingCommand.create_success(request)

    def _persist(self, text: str) -> None:
        path = Path(self._config.config_store_path)
        if not self._config.config_store_path:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(path.name + ".tmp")
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)
        except OSError as exc:
            # As RocketMQ: the change holds in memory; the file keeps the old settings.
            log.error("persist name server config to %s failed: %s", path, exc)

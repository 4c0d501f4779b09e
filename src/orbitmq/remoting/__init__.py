"""The asyncio transport for RocketMQ remoting: ``RemotingServer`` (one table code ->
processor), ``RemotingClient`` (opaque -> future, one connection per address), connection
lifetime and idle close, and the single boundary where failures become REQUEST_CODE_NOT_SUPPORTED,
SYSTEM_BUSY and SYSTEM_ERROR. Bytes are framed by ``orbitmq.protocol``."""

from orbitmq.remoting.channel import Channel
from orbitmq.remoting.channel_context import ChannelContext, ChannelEventListener
from orbitmq.remoting.channel_event_listeners import ChannelEventListeners
from orbitmq.remoting.code_dispatching_processor import CodeDispatchingProcessor, Handler
from orbitmq.remoting.errors import (
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    RequestRefusedError,
)
from orbitmq.remoting.event_loop import install_uvloop, new_event_loop, run, uvloop_available
from orbitmq.remoting.processor_table import (
    NOT_SUPPORTED_REMARK,
    OVERLOAD_REMARK,
    REJECT_REQUEST_REMARK,
    ProcessorTable,
    Registration,
    exception_simple_desc,
)
from orbitmq.remoting.prom_exporter import (
    DEFAULT_PROM_EXPORTER_PORT,
    LABEL_CLUSTER_NAME,
    LABEL_NODE_ID,
    LABEL_NODE_TYPE,
    PromExporter,
    node_labels,
)
from orbitmq.remoting.remoting_client import RemotingClient, parse_address
from orbitmq.remoting.remoting_server import RemotingServer
from orbitmq.remoting.request_executor import (
    DEFAULT_CAPACITY,
    PCBUSY_CLEAN_QUEUE_REMARK,
    TIMEOUT_CLEAN_QUEUE_REMARK,
    RequestExecutor,
)
from orbitmq.remoting.request_processor import RequestProcessor
from orbitmq.remoting.rpc_hook import RPCHook
from orbitmq.remoting.rpc_metrics import RpcLatencyRecorder
from orbitmq.remoting.tls_system_config import (
    DEFAULT_TLS_CONFIG_FILE,
    TLS_KEYS,
    ClientAuth,
    TlsMode,
    TlsSystemConfig,
    load_tls_config,
)

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_PROM_EXPORTER_PORT",
    "DEFAULT_TLS_CONFIG_FILE",
    "LABEL_CLUSTER_NAME",
    "LABEL_NODE_ID",
    "LABEL_NODE_TYPE",
    "NOT_SUPPORTED_REMARK",
    "OVERLOAD_REMARK",
    "PCBUSY_CLEAN_QUEUE_REMARK",
    "REJECT_REQUEST_REMARK",
    "TIMEOUT_CLEAN_QUEUE_REMARK",
    "TLS_KEYS",
    "Channel",
    "ChannelContext",
    "ChannelEventListener",
    "ChannelEventListeners",
    "ClientAuth",
    "CodeDispatchingProcessor",
    "Handler",
    "ProcessorTable",
    "PromExporter",
    "RPCHook",
    "Registration",
    "RemotingClient",
    "RemotingConnectError",
    "RemotingError",
    "RemotingSendRequestError",
    "RemotingServer",
    "RemotingTimeoutError",
    "RequestExecutor",
    "RequestProcessor",
    "RequestRefusedError",
    "RpcLatencyRecorder",
    "TlsMode",
    "TlsSystemConfig",
    "exception_simple_desc",
    "install_uvloop",
    "load_tls_config",
    "new_event_loop",
    "node_labels",
    "parse_address",
    "run",
    "uvloop_available",
]

"""RocketMQ's TLS settings (``TlsSystemConfig`` and ``TlsHelper``): the ``tls.*`` keys, where
they are read from, and the ``ssl.SSLContext`` each side of a connection is built from.

RocketMQ reads the keys from Java system properties and then from the properties file named
by ``tls.config.file`` (default ``/etc/rocketmq/tls.properties``), whose values win. Here the
first layer is a server's own config file (broker.conf, namesrv.conf) or a client's options;
the file named by ``tls.config.file`` is laid over it the same way.
"""

from __future__ import annotations

import enum
import logging
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Final

from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import parse_properties

log = logging.getLogger(__name__)

#: RocketMQ's default for ``tls.config.file``.
DEFAULT_TLS_CONFIG_FILE: Final = "/etc/rocketmq/tls.properties"
#: Every key, RocketMQ's spelling, to the ``TlsSystemConfig`` field it sets.
TLS_KEYS: Final = {
    "tls.server.mode": "server_mode",
    "tls.enable": "enable",
    "tls.config.file": "config_file",
    "tls.test.mode.enable": "test_mode_enable",
    "tls.server.need.client.auth": "server_need_client_auth",
    "tls.server.keyPath": "server_key_path",
    "tls.server.keyPassword": "server_key_password",
    "tls.server.certPath": "server_cert_path",
    "tls.server.authClient": "server_auth_client",
    "tls.server.trustCertPath": "server_trust_cert_path",
    "tls.client.keyPath": "client_key_path",
    "tls.client.keyPassword": "client_key_password",
    "tls.client.certPath": "client_cert_path",
    "tls.client.authServer": "client_auth_server",
    "tls.client.trustCertPath": "client_trust_cert_path",
}


class TlsMode(enum.Enum):
    """``tls.server.mode``: what a remoting server does with plain and TLS connections."""

    #: Plain connections only; a TLS ClientHello is refused.
    DISABLED = "disabled"
    #: Both, told apart by the first byte (a TLS record starts with 0x16).
    PERMISSIVE = "permissive"
    #: TLS only; a plain connection is refused.
    ENFORCING = "enforcing"


class ClientAuth(enum.Enum):
    """``tls.server.need.client.auth``: whether a server asks for the client's certificate."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


@dataclass(frozen=True, slots=True)
class TlsSystemConfig:
    """The ``tls.*`` settings, RocketMQ's defaults. Immutable; safe to share."""

    server_mode: TlsMode = TlsMode.PERMISSIVE
    #: A client (and a broker's own outgoing connections) speaks TLS.
    enable: bool = False
    config_file: str = DEFAULT_TLS_CONFIG_FILE
    #: RocketMQ's test mode: a client trusts any server certificate.
    test_mode_enable: bool = True
    server_need_client_auth: ClientAuth = ClientAuth.NONE
    server_key_path: str | None = None
    server_key_password: str | None = None
    server_cert_path: str | None = None
    server_auth_client: bool = False
    server_trust_cert_path: str | None = None
    client_key_path: str | None = None
    client_key_password: str | None = None
    client_cert_path: str | None = None
    client_auth_server: bool = False
    client_trust_cert_path: str | None = None

    @classmethod
    def load(cls, properties: Mapping[str, str]) -> TlsSystemConfig:
        """The ``tls.*`` keys of ``properties`` over the defaults, then the file named by
        ``tls.config.file`` over those (a missing file is skipped, as in RocketMQ). Other
        keys are ignored. Raises ConfigError naming a key with a bad value."""
        config = cls().with_properties(properties)
        path = Path(config.config_file)
        if not path.is_file():
            log.debug("tls config file %s does not exist, skipped", path)
            return config
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read tls.config.file {path}: {exc.strerror}") from exc
        return config.with_properties(parse_properties(text))

    def with_properties(self, properties: Mapping[str, str]) -> TlsSystemConfig:
        """A copy with the ``tls.*`` keys of ``properties`` set."""
        kinds = {f.name: f.type for f in fields(self)}
        changes: dict[str, object] = {}
        for key, raw in properties.items():
            name = TLS_KEYS.get(key)
            if name is not None:
                changes[name] = _convert(key, raw.strip(), str(kinds[name]))
        return replace(self, **changes)  # type: ignore[arg-type]

    def server_context(self) -> ssl.SSLContext | None:
        """The server side's context (RocketMQ's ``TlsHelper.buildSslContext(false)``); None
        when no certificate and key are configured: TLS connections are then refused."""
        if not self.server_cert_path or not self.server_key_path:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _load_chain(context, self.server_cert_path, self.server_key_path, self.server_key_password)
        if self.server_auth_client:
            context.verify_mode = _VERIFY_MODES[self.server_need_client_auth]
            _load_trust(context, self.server_trust_cert_path, ssl.Purpose.CLIENT_AUTH)
        elif self.server_need_client_auth is not ClientAuth.NONE:
            # RocketMQ then asks for a certificate and trusts any; Python's ssl cannot take a
            # certificate without checking it, so none is asked for.
            log.warning(
                "tls.server.need.client.auth=%s is not applied: tls.server.authClient is false",
                self.server_need_client_auth.value,
            )
        return context

    def outgoing_context(self) -> ssl.SSLContext | None:
        """What a client connects with: ``client_context()`` when tls.enable, else None."""
        return self.client_context() if self.enable else None

    def client_context(self) -> ssl.SSLContext:
        """The client side's context (``TlsHelper.buildSslContext(true)``): the server's
        certificate is checked only with tls.client.authServer=true outside test mode; host
        names are never checked (RocketMQ connects by address)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        if self.test_mode_enable or not self.client_auth_server:
            context.verify_mode = ssl.CERT_NONE
        else:
            _load_trust(context, self.client_trust_cert_path, ssl.Purpose.SERVER_AUTH)
        if not self.test_mode_enable and self.client_cert_path and self.client_key_path:
            _load_chain(
                context, self.client_cert_path, self.client_key_path, self.client_key_password
            )
        return context


def load_tls_config(conf_path: str | os.PathLike[str] | None) -> TlsSystemConfig:
    """A server's settings: the ``tls.*`` keys of its config file (broker.conf,
    namesrv.conf; None: no file), then the file named by ``tls.config.file``. Raises
    ConfigError for an unreadable file or a bad value."""
    if conf_path is None:
        return TlsSystemConfig.load({})
    try:
        text = Path(conf_path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {conf_path}: {exc.strerror}") from exc
    return TlsSystemConfig.load(parse_properties(text))


_VERIFY_MODES: Final = {
    ClientAuth.NONE: ssl.CERT_NONE,
    ClientAuth.OPTIONAL: ssl.CERT_OPTIONAL,
    ClientAuth.REQUIRE: ssl.CERT_REQUIRED,
}


def _convert(key: str, raw: str, kind: str) -> object:
    if "TlsMode" in kind or "ClientAuth" in kind:
        enum_type: type[TlsMode] | type[ClientAuth] = TlsMode if "TlsMode" in kind else ClientAuth
        try:
            return enum_type(raw.lower())
        except ValueError:
            allowed = "/".join(member.value for member in enum_type)
            raise ConfigError(f"{key}: {raw!r} is not one of {allowed}") from None
    if kind == "bool":
        if raw.lower() not in ("true", "false"):
            raise ConfigError(f"{key}: {raw!r} is not true or false")
        return raw.lower() == "true"
    if "None" in kind:
        return raw or None
    return raw


def _load_chain(context: ssl.SSLContext, cert: str, key: str, password: str | None) -> None:
    try:
        context.load_cert_chain(cert, key, password=password)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the certificate {cert} with the key {key}: {exc}") from exc


def _load_trust(context: ssl.SSLContext, trust_cert_path: str | None, purpose: ssl.Purpose) -> None:
    if not trust_cert_path:
        context.load_default_certs(purpose)
        return
    try:
        context.load_verify_locations(cafile=trust_cert_path)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the trusted certificates {trust_cert_path}: {exc}") from exc

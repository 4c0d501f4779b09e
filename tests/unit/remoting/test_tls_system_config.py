"""RocketMQ's tls.* settings: their names and defaults, the tls.config.file layer, bad
values named, the contexts built from them, and where the servers, the CLI and the Spark
options read them."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import pytest

from orbitmq.broker import load_broker_config
from orbitmq.cli.session import client_tls
from orbitmq.cli.web_console import console_ssl
from orbitmq.common.errors import ConfigError
from orbitmq.remoting import (
    DEFAULT_TLS_CONFIG_FILE,
    TLS_KEYS,
    ClientAuth,
    TlsMode,
    TlsSystemConfig,
    load_tls_config,
)
from orbitmq.spark.options import OptionError, SinkOptions, SourceOptions
from tests.tls_certs import SERVER_KEY_PASSWORD, Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_rocketmq_names_and_defaults() -> None:
    assert set(TLS_KEYS) == {
        "tls.server.mode",
        "tls.enable",
        "tls.config.file",
        "tls.test.mode.enable",
        "tls.server.need.client.auth",
        "tls.server.keyPath",
        "tls.server.keyPassword",
        "tls.server.certPath",
        "tls.server.authClient",
        "tls.server.trustCertPath",
        "tls.client.keyPath",
        "tls.client.keyPassword",
        "tls.client.certPath",
        "tls.client.authServer",
        "tls.client.trustCertPath",
    }
    config = TlsSystemConfig()
    assert config.server_mode is TlsMode.PERMISSIVE
    assert config.server_need_client_auth is ClientAuth.NONE
    assert (config.enable, config.test_mode_enable) == (False, True)
    assert (config.server_auth_client, config.client_auth_server) == (False, False)
    assert config.config_file == DEFAULT_TLS_CONFIG_FILE == "/etc/rocketmq/tls.properties"


def test_the_config_file_wins_over_the_first_layer(tmp_path: Path) -> None:
    tls_file = tmp_path / "tls.properties"
    tls_file.write_text(
        "tls.test.mode.enable=false\ntls.server.need.client.auth=require\n"
        "tls.client.trustCertPath=/from/file.pem\n"
    )
    config = TlsSystemConfig.load(
        {
            "tls.config.file": str(tls_file),
            "tls.server.mode": "Enforcing",
            "tls.client.trustCertPath": "/from/conf.pem",
            "listenPort": "10911",
        }
    )
    assert config.server_mode is TlsMode.ENFORCING
    assert config.server_need_client_auth is ClientAuth.REQUIRE
    assert config.test_mode_enable is False
    assert config.client_trust_cert_path == "/from/file.pem"
    missing = TlsSystemConfig.load({"tls.config.file": str(tmp_path / "absent")})
    assert missing.server_mode is TlsMode.PERMISSIVE


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("tls.server.mode", "strict", "disabled/permissive/enforcing"),
        ("tls.server.need.client.auth", "always", "none/optional/require"),
        ("tls.enable", "yes", "true or false"),
    ],
)
def test_a_bad_value_names_its_key(key: str, value: str, said: str) -> None:
    with pytest.raises(ConfigError, match=rf"{key}: '{value}' is not .*{said}"):
        TlsSystemConfig().with_properties({key: value})


def test_contexts(pki: Pki, tmp_path: Path) -> None:
    assert TlsSystemConfig().server_context() is None  # no certificate: TLS refused
    server = TlsSystemConfig().with_properties(pki.server_properties("enforcing", "require"))
    context = server.server_context()
    assert context is not None and context.verify_mode is ssl.CERT_REQUIRED
    wrong_password = server.with_properties({"tls.server.keyPassword": "nope"})
    with pytest.raises(ConfigError, match="cannot load the certificate"):
        wrong_password.server_context()

    assert TlsSystemConfig().client_context().verify_mode is ssl.CERT_NONE  # test mode
    client = TlsSystemConfig().with_properties(pki.client_properties())
    assert client.client_context().verify_mode is ssl.CERT_REQUIRED
    assert client.outgoing_context() is not None
    assert TlsSystemConfig().outgoing_context() is None  # tls.enable=false: plain


def test_servers_read_tls_keys_from_their_config_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName=b\ntls.server.mode=enforcing\ntls.enable=true\n"
        f"tls.config.file={tmp_path / 'absent'}\n"
    )
    caplog.set_level(logging.WARNING)
    startup = load_broker_config(conf, environ={})
    assert not any("tls." in r.getMessage() for r in caplog.records)
    assert "tls.server.mode" not in startup.unknown_keys
    tls = load_tls_config(conf)
    assert (tls.server_mode, tls.enable) == (TlsMode.ENFORCING, True)


def test_cli_and_spark_options(pki: Pki, tmp_path: Path) -> None:
    tls_file = tmp_path / "client-tls.properties"
    tls_file.write_text("".join(f"{k}={v}\n" for k, v in pki.client_properties().items()))
    from_file = client_tls(False, str(tls_file))
    assert from_file.enable and from_file.client_trust_cert_path == str(pki.ca)
    forced = client_tls(True, None)
    assert forced.enable
    with pytest.raises(ConfigError, match="--tls-config-file"):
        client_tls(False, str(tmp_path / "absent"))

    source = SourceOptions.parse(
        {"namesrvAddr": "h:9876", "topic": "T", "TLS": "true", "tlsConfigFile": str(tls_file)},
        streaming=False,
    )
    assert source.endpoint.tls.enable
    assert source.endpoint.client_config().use_tls
    assert source.endpoint.tls.client_cert_path == str(pki.client_cert)
    sink = SinkOptions.parse({"namesrvAddr": "h:9876", "topic": "T"})
    assert not sink.endpoint.client_config().use_tls
    with pytest.raises(OptionError, match="tlsConfigFile"):
        SinkOptions.parse({"namesrvAddr": "h:9876", "tlsConfigFile": str(tmp_path / "x")})


def test_console_https_context(pki: Pki) -> None:
    assert console_ssl("", "") is None  # plain HTTP
    with pytest.raises(ConfigError, match="both a certificate and a key"):
        console_ssl(str(pki.server_cert), "")
    with pytest.raises(ConfigError, match=str(pki.server_cert)):
        console_ssl(str(pki.server_cert), str(pki.server_key), "wrong")
    context = console_ssl(str(pki.server_cert), str(pki.server_key), SERVER_KEY_PASSWORD)
    assert context is not None

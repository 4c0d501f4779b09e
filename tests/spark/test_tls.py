"""The Spark source and sink over TLS: a cluster whose name server and broker take TLS only
(tls.server.mode=enforcing, client certificates required), written to and read back with
the ``tls`` and ``tlsConfigFile`` options."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from orbitmq.remoting import TlsSystemConfig
from orbitmq.testing import ThreadedCluster
from tests.tls_certs import Pki, make_pki

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[ThreadedCluster]:
    keys = {**pki.server_properties("enforcing", "require"), **pki.client_properties()}
    tls = TlsSystemConfig().with_properties(keys)
    with ThreadedCluster(tmp_path_factory.mktemp("tls-cluster"), tls=tls) as running:
        yield running


def test_sink_and_source_over_tls(
    spark: SparkSession, tls_cluster: ThreadedCluster, pki: Pki, tmp_path: Path
) -> None:
    tls_file = tmp_path / "tls.properties"
    tls_file.write_text("".join(f"{k}={v}\n" for k, v in pki.client_properties().items()))
    options = {
        "namesrvAddr": tls_cluster.namesrv_addr,
        "topic": "SparkTls",
        "tls": "true",
        "tlsConfigFile": str(tls_file),
    }
    rows = spark.createDataFrame([(f"k{i}", f"body {i}") for i in range(20)], ["keys", "body"])
    rows.write.format("orbitmq").options(**options).mode("append").save()

    read = spark.read.format("orbitmq").options(**options).load()
    bodies = sorted(bytes(row.body).decode() for row in read.select("body").collect())
    assert bodies == sorted(f"body {i}" for i in range(20))

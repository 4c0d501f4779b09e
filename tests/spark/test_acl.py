"""The Spark source and sink against a broker with aclEnable=true: with the ``accessKey`` /
``secretKey`` options the sink writes (plainly and exactly once) and the source reads back;
with a wrong secret or no keys the job fails with the broker's refusal, and the secret shows
in no plan string."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from orbitmq.client import ClientConfig
from orbitmq.sync import AdminClient
from orbitmq.testing import ThreadedCluster

pytestmark = pytest.mark.timeout(300)

SECRET = "spark-secret-1"
PLAIN_ACL_YML = f"""\
accounts:
  - accessKey: sparkjob
    secretKey: {SECRET}
    admin: true
"""


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    home = tmp_path_factory.mktemp("acl-home")
    (home / "conf").mkdir()
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    settings = {"acl_enable": True, "rocketmq_home": str(home)}
    root = tmp_path_factory.mktemp("acl-cluster")
    with ThreadedCluster(root, broker_settings=settings) as running:
        yield running


def options(cluster: ThreadedCluster, topic: str, **keys: str) -> dict[str, str]:
    return {"namesrvAddr": cluster.namesrv_addr, "topic": topic, **keys}


def test_sink_and_source_with_the_right_keys(
    spark: SparkSession, acl_cluster: ThreadedCluster
) -> None:
    signed = options(acl_cluster, "SparkAcl", accessKey="sparkjob", secretKey=SECRET)
    rows = spark.createDataFrame([(f"k{i}", f"body {i}") for i in range(20)], ["keys", "body"])
    rows.write.format("orbitmq").options(**signed).mode("append").save()
    # Exactly once: halves, the intent topic, its key query and the commits, all signed.
    staged = spark.createDataFrame([(f"k{i}", f"staged {i}") for i in range(5)], ["keys", "body"])
    staged.write.format("orbitmq").options(**signed, exactlyOnce="true").mode("append").save()

    read = spark.read.format("orbitmq").options(**signed).load()
    bodies = sorted(bytes(row.body).decode() for row in read.select("body").collect())
    expected = [f"body {i}" for i in range(20)] + [f"staged {i}" for i in range(5)]
    assert bodies == sorted(expected)
    plan = read._jdf.queryExecution().toString()
    assert SECRET not in plan


@pytest.mark.parametrize(
    ("keys", "refusal"),
    [
        ({"accessKey": "sparkjob", "secretKey": "wrong-secret"}, "Check signature failed"),
        ({}, "No accessKey is configured"),
    ],
)
def test_wrong_or_no_keys_fail_the_job_with_the_refusal(
    spark: SparkSession, acl_cluster: ThreadedCluster, keys: dict[str, str], refusal: str
) -> None:
    operator = ClientConfig(acl_cluster.namesrv_addr, access_key="sparkjob", secret_key=SECRET)
    with AdminClient(client_config=operator) as admin:
        admin.create_topic("SparkAclRefused", queue_nums=1)
    unsigned = options(acl_cluster, "SparkAclRefused", **keys)
    rows = spark.createDataFrame([("k", "body")], ["keys", "body"])
    with pytest.raises(Exception, match=refusal) as write_failed:
        rows.write.format("orbitmq").options(**unsigned).mode("append").save()
    with pytest.raises(Exception, match=refusal) as read_failed:
        spark.read.format("orbitmq").options(**unsigned).load().collect()
    for failure in (write_failed.value, read_failed.value):
        assert SECRET not in str(failure)

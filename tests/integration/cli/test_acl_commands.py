"""``orbitmq admin``'s ACL commands against a broker with aclEnable=true, signing with
--access-key/--secret-key or ORBITMQ_ACCESS_KEY/ORBITMQ_SECRET_KEY."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from orbitmq.cli.main import cli
from orbitmq.testing import ThreadedCluster

pytestmark = pytest.mark.slow

OPERATOR = ["--access-key", "operator1", "--secret-key", "operator-secret"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    (home / "conf").mkdir()
    (home / "conf" / "plain_acl.yml").write_text(
        "accounts:\n  - accessKey: operator1\n    secretKey: operator-secret\n    admin: true\n"
    )
    return home


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[ThreadedCluster]:
    settings = {"acl_enable": True, "rocketmq_home": str(home)}
    with ThreadedCluster(tmp_path_factory.mktemp("acl"), broker_settings=settings) as running:
        yield running


def orbitmq(cluster: ThreadedCluster, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, [*args, "-n", cluster.namesrv_addr], env=env)


def test_update_and_delete_an_account_with_the_key_options(
    cluster: ThreadedCluster, home: Path
) -> None:
    created = orbitmq(
        cluster, "admin", "updateAclConfig", "-c", "DefaultCluster", "-a", "writer01",
        "-s", "writer-secret", "-t", "TopicA=PUB,TopicB=SUB", "-i", "DENY", "--json", *OPERATOR,
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout) == [
        {"brokerAddr": cluster.cluster.brokers[0].address, "accessKey": "writer01"}
    ]
    account = yaml.safe_load((home / "conf" / "plain_acl.yml").read_text())["accounts"][-1]
    assert account["topicPerms"] == ["TopicA=PUB", "TopicB=SUB"]
    deleted = orbitmq(cluster, "admin", "deleteAclConfig", "-c", "DefaultCluster",
                      "-a", "writer01", *OPERATOR)  # fmt: skip
    assert deleted.exit_code == 0, deleted.output
    assert "writer01" not in (home / "conf" / "plain_acl.yml").read_text()


def test_the_environment_gives_the_keys(cluster: ThreadedCluster) -> None:
    env = {"ORBITMQ_ACCESS_KEY": "operator1", "ORBITMQ_SECRET_KEY": "operator-secret"}
    listed = orbitmq(cluster, "admin", "clusterAclConfigVersion", "-c", "DefaultCluster",
                     "--json", env=env)  # fmt: skip
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.stdout)
    assert row["brokerName"] == "broker-a"
    white = orbitmq(cluster, "admin", "updateGlobalWhiteAddr", "-b",
                    cluster.cluster.brokers[0].address, "-g", "10.10.103.*", env=env)  # fmt: skip
    assert white.exit_code == 0, white.output


def test_without_keys_the_broker_refuses(cluster: ThreadedCluster) -> None:
    refused = orbitmq(cluster, "admin", "clusterAclConfigVersion", "-c", "DefaultCluster")
    assert refused.exit_code == 1
    assert "No accessKey is configured" in refused.stderr

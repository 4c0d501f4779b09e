"""OrbitMQ's own apache.rocketmq.v2 .proto files, compiled at build time, describe the same
API as the official RocketMQ 5 Python client's compiled descriptors (rocketmq-python-client
5.1.2, in its own virtualenv): every message's fields (names, numbers, types, labels,
presence, oneofs), every enum's values, every RPC's types and streaming kinds."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pb2

from orbitmq.proxy.v2 import definition_pb2, service_pb2
from tests.compat.conftest import ClientRunner


def test_our_descriptors_match_the_official_clients(
    python_5x: ClientRunner, tmp_path: Path
) -> None:
    ours = descriptor_pb2.FileDescriptorSet()
    for module in (definition_pb2, service_pb2):
        ours.file.add().ParseFromString(module.DESCRIPTOR.serialized_pb)
    path = tmp_path / "ours.pb"
    path.write_bytes(ours.SerializeToString())
    [report] = python_5x.run("grpc_descriptors.py", path)
    assert report["differences"] == []
    # Everything the client knows was compared: its messages, enums and the service.
    assert report["compared"]["message"] >= 60
    assert report["compared"]["enum"] >= 14
    assert report["compared"]["service"] == 1
    # The comparison sees a slip: one field renumbered is one difference, named.
    [resource] = [m for m in ours.file[0].message_type if m.name == "Resource"]
    resource.field[1].number = 3
    path.write_bytes(ours.SerializeToString())
    [slipped] = python_5x.run("grpc_descriptors.py", path)
    assert slipped["differences"] == ["message apache.rocketmq.v2.Resource.name: number: 3 != 2"]

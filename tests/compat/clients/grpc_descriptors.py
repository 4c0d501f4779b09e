"""Compare OrbitMQ's compiled apache.rocketmq.v2 descriptors with the ones the official
RocketMQ 5 Python client ships (``rocketmq.grpc_protocol``), message by message.

Run with the rocketmq-python-client virtualenv's Python:
``python grpc_descriptors.py OURS.pb``, where OURS.pb is a serialized FileDescriptorSet of
OrbitMQ's definition and service files. Ours are loaded into a pool of their own (their
message names are the client's, so they cannot share its default pool). Prints one JSON
line: the number of messages, enums and services compared and every difference found
(field names, numbers, types, labels, presence and oneofs; enum values; each RPC's types
and streaming kinds). Exit status 0 either way: the test reads the differences.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, timestamp_pb2
from rocketmq.grpc_protocol import definition_pb2, service_pb2


def field_shape(field: Any) -> dict[str, Any]:
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:  # protobuf before 6 has ``label`` only
        repeated = field.label == field.LABEL_REPEATED
    type_name = ""
    if field.message_type is not None:
        type_name = field.message_type.full_name
    elif field.enum_type is not None:
        type_name = field.enum_type.full_name
    oneof = field.containing_oneof
    return {
        "number": field.number,
        "type": field.type,
        "repeated": bool(repeated),
        "type_name": type_name,
        "oneof": oneof.name if oneof is not None else "",
        "presence": bool(field.has_presence),
    }


def enum_shape(enum: Any) -> dict[str, int]:
    return {value.name: value.number for value in enum.values}


def message_shapes(message: Any, out: dict[str, Any], enums: dict[str, Any]) -> None:
    out[message.full_name] = {field.name: field_shape(field) for field in message.fields}
    for enum in message.enum_types:
        enums[enum.full_name] = enum_shape(enum)
    for nested in message.nested_types:
        message_shapes(nested, out, enums)


def shapes(files: list[Any]) -> dict[str, dict[str, Any]]:
    messages: dict[str, Any] = {}
    enums: dict[str, Any] = {}
    services: dict[str, Any] = {}
    for file in files:
        for enum in file.enum_types_by_name.values():
            enums[enum.full_name] = enum_shape(enum)
        for message in file.message_types_by_name.values():
            message_shapes(message, messages, enums)
        for service in file.services_by_name.values():
            services[service.full_name] = {
                method.name: [
                    method.input_type.full_name,
                    method.output_type.full_name,
                    method.client_streaming,
                    method.server_streaming,
                ]
                for method in service.methods
            }
    return {"message": messages, "enum": enums, "service": services}


def _describe(kind: str, name: str, key: str, mine: Any, theirs: Any) -> str:
    """One difference; for a field, the attributes that differ."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        parts = [
            f"{k}: {mine.get(k)} != {theirs.get(k)}" for k in theirs if mine.get(k) != theirs.get(k)
        ]
        return f"{kind} {name}.{key}: " + ", ".join(parts)
    return f"{kind} {name}.{key}: {mine} != {theirs}"


def differences(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    found = []
    for kind, table in theirs.items():
        for name, shape in table.items():
            mine = ours[kind].get(name)
            if mine is None:
                found.append(f"{kind} {name}: missing from ours")
            elif mine != shape:
                for key in sorted(set(shape) | set(mine)):
                    if shape.get(key) != mine.get(key):
                        found.append(_describe(kind, name, key, mine.get(key), shape.get(key)))
        found += [f"{kind} {name}: not the client's" for name in ours[kind] if name not in table]
    return found


def main() -> None:
    with open(sys.argv[1], "rb") as file:
        ours_set = descriptor_pb2.FileDescriptorSet.FromString(file.read())
    pool = descriptor_pool.DescriptorPool()
    for well_known in (timestamp_pb2, duration_pb2):
        pool.AddSerializedFile(well_known.DESCRIPTOR.serialized_pb)
    for proto in ours_set.file:
        pool.Add(proto)
    ours = [pool.FindFileByName(proto.name) for proto in ours_set.file]
    theirs = shapes([definition_pb2.DESCRIPTOR, service_pb2.DESCRIPTOR])
    mine = shapes(ours)
    counts = {kind: len(table) for kind, table in theirs.items()}
    print(json.dumps({"compared": counts, "differences": differences(theirs, mine)}))


if __name__ == "__main__":
    main()

"""Plain ACL signatures as RocketMQ's AclClientRPCHook makes them: the expected values are
built here from the documented algorithm (HMAC-SHA1 keyed by the secret key over the
extField values sorted by key, Signature left out, then the body; Base64), and checked
against every signed request the real C++ clients sent in the recordings."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from orbitmq.client import AclClientRPCHook, SessionCredentials
from orbitmq.protocol import RemotingCommand, RequestCode, acl_signer, decode_command
from tests.support import compat_recordings


def documented_signature(fields: dict[str, str], body: bytes, secret_key: str) -> str:
    content = "".join(fields[k] for k in sorted(fields) if k != "Signature").encode() + body
    mac = hmac.new(secret_key.encode(), content, hashlib.sha1).digest()
    return base64.b64encode(mac).decode()


def test_a_send_is_signed_as_the_java_acl_client_rpc_hook_signs_it() -> None:
    # SendMessageRequestHeaderV2's short keys, as the Java producer writes them.
    fields = {"a": "PID_ACL", "b": "TopicA", "c": "TBW102", "d": "4", "e": "0", "f": "0"}
    request = RemotingCommand.create_request(RequestCode.SEND_MESSAGE_V2, dict(fields), b"hello")
    hook = AclClientRPCHook(SessionCredentials("RocketMQ", "12345678", "token-1"))
    hook.do_before_request("127.0.0.1:10911", request)

    signed = {**fields, "AccessKey": "RocketMQ", "SecurityToken": "token-1"}
    expected = documented_signature(signed, b"hello", "12345678")
    assert request.ext_fields == {**signed, "Signature": expected}
    # The content, spelled out: values in key order (upper case sorts first), then the body.
    assert acl_signer.combine_request_content(request.ext_fields, request.body) == (
        b"RocketMQtoken-1PID_ACLTopicATBW102400hello"
    )
    # On the wire the three keys are plain extFields of the JSON header.
    header = json.loads(request.encode()[8 : -len(b"hello")])
    assert header["extFields"]["Signature"] == expected
    assert header["extFields"]["AccessKey"] == "RocketMQ"


def test_signing_again_replaces_the_signature_rather_than_signing_it() -> None:
    request = RemotingCommand.create_request(RequestCode.PULL_MESSAGE, {"topic": "T"})
    hook = AclClientRPCHook(SessionCredentials("RocketMQ", "12345678"))
    hook.do_before_request("b:1", request)
    first = request.ext_fields["Signature"]
    hook.do_before_request("b:1", request)
    assert request.ext_fields["Signature"] == first
    assert "SecurityToken" not in request.ext_fields


def test_the_broker_leaves_out_the_unique_key_query_flag_and_the_client_does_not() -> None:
    fields = {"topic": "T", "_UNIQUE_KEY_QUERY": "true", "Signature": "x"}
    assert acl_signer.combine_request_content(fields, b"!") == b"trueT!"  # "_" < "t"
    assert acl_signer.broker_request_content(fields, b"!") == b"T!"


def test_keys_sort_by_utf16_code_unit_as_java_strings_do() -> None:
    # U+FF21 (one UTF-16 unit) sorts after U+1F600 (a surrogate pair starting 0xD83D) in
    # Java, before it in code point order.
    fields = {"\uff21": "fullwidth", "\U0001f600": "emoji"}
    assert acl_signer.combine_request_content(fields, b"") == b"emojifullwidth"


def _recorded_signed_requests() -> list[tuple[str, RemotingCommand]]:
    found = []
    for path in compat_recordings():
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "Signature" not in (record["header"].get("extFields") or {}):
                continue
            # The hex holds only a frame's first 512 bytes: the frame is rebuilt from the
            # recorded header (values as the client typed them) and body text.
            header = json.dumps(record["header"]).encode()
            body = record["body"].encode("utf-8")
            assert len(body) == record["bodyLen"]
            found.append(
                (path.name, decode_command(len(header).to_bytes(4, "big") + header + body))
            )
    return found


@pytest.mark.parametrize("name, command", _recorded_signed_requests())
def test_every_signed_request_of_the_real_cpp_clients_verifies(
    name: str, command: RemotingCommand
) -> None:
    # The C++ clients sign with their (here empty) session credentials.
    content = acl_signer.broker_request_content(command.ext_fields, command.body)
    assert acl_signer.cal_signature(content, "") == command.ext_fields["Signature"]

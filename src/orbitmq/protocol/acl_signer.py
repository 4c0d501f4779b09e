"""RocketMQ 4.x plain ACL request signatures (``AclClientRPCHook``, ``AclUtils``, ``AclSigner``).

A signed request carries three (or four) more extFields: ``AccessKey``, optionally
``SecurityToken``, and ``Signature``. The signature is HMAC-SHA1, keyed by the UTF-8 secret
key, over the content: the values of every other extField, concatenated in the order of
their keys (Java's ``TreeMap``: UTF-16 code units), as UTF-8, followed by the body bytes;
the result is Base64. The signer includes every extField but ``Signature``; the broker
leaves out ``Signature`` and ``_UNIQUE_KEY_QUERY`` (``PlainAccessValidator.parse``).
Pure functions, safe from any thread.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Final

from orbitmq.protocol.remoting_command import RemotingCommand

#: ``SessionCredentials``' extField keys.
ACCESS_KEY: Final = "AccessKey"
SECRET_KEY: Final = "SecretKey"
SIGNATURE: Final = "Signature"
SECURITY_TOKEN: Final = "SecurityToken"
#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: the broker leaves it out of the signed content.
UNIQUE_MSG_QUERY_FLAG: Final = "_UNIQUE_KEY_QUERY"

_CLIENT_SKIPPED: Final = frozenset({SIGNATURE})
_BROKER_SKIPPED: Final = frozenset({SIGNATURE, UNIQUE_MSG_QUERY_FLAG})


def _java_order(key: str) -> bytes:
    # Java compares Strings by UTF-16 code unit; big-endian UTF-16 bytes sort the same way
    # (code point order differs only for characters beyond the BMP).
    return key.encode("utf-16-be")


def combine_request_content(
    ext_fields: Mapping[str, str], body: bytes, skipped: frozenset[str] = _CLIENT_SKIPPED
) -> bytes:
    """The signed bytes: the extField values but ``skipped`` in key order, then the body."""
    keys = sorted(ext_fields)
    # Code point order is Java's for every key without characters beyond the BMP; ASCII
    # keys (all of RocketMQ's) skip the re-sort.
    if not all(map(str.isascii, keys)):
        keys.sort(key=_java_order)
    values = "".join([ext_fields[key] for key in keys if key not in skipped])
    return values.encode("utf-8") + body


def broker_request_content(ext_fields: Mapping[str, str], body: bytes) -> bytes:
    """The content a RocketMQ broker checks a request's signature against."""
    return combine_request_content(ext_fields, body, _BROKER_SKIPPED)


def cal_signature(content: bytes, secret_key: str) -> str:
    """Base64 of HMAC-SHA1(secret_key, content) (``AclSigner.calSignature``)."""
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign_request(
    request: RemotingCommand,
    access_key: str,
    secret_key: str,
    security_token: str | None = None,
) -> None:
    """Add AccessKey, SecurityToken (when given) and Signature to ``request``'s extFields,
    as ``AclClientRPCHook.doBeforeRequest`` does. A request signed twice (a retry of the same
    command) gets a fresh signature: the old one is not part of the content."""
    fields = request.ext_fields
    fields[ACCESS_KEY] = access_key
    if security_token is not None:
        fields[SECURITY_TOKEN] = security_token
    fields[SIGNATURE] = cal_signature(combine_request_content(fields, request.body), secret_key)

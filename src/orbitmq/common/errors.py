"""The root of OrbitMQ's exceptions.

Expected outcomes (a full disk, an oversize message, a missing offset) are status enums, not
exceptions; what raises is corruption, misuse, and failures that leave no sensible status.
"""

from __future__ import annotations


class OrbitError(Exception):
    """Root of every exception OrbitMQ raises on purpose."""


class MessageFormatError(OrbitError):
    """Bytes that do not form a valid message record, batch or property string."""


class ConfigError(OrbitError):
    """A configuration value that is missing, of the wrong type or out of range.

    The message names the key, the value and the limit.
    """

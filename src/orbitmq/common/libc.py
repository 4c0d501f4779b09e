"""Functions of the C library that Python's standard modules do not wrap, loaded once through
ctypes. A call through ctypes lets go of the GIL for its duration; ``use_errno`` keeps the
call's errno for ``ctypes.get_errno``. Safe from any thread."""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any


def libc_function(name: str, argtypes: tuple[Any, ...], restype: Any) -> Any | None:
    """The C library's function ``name`` with its argument and result types set; None where
    the library or the function is missing (another platform, an older libc)."""
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = argtypes
    function.restype = restype
    return function

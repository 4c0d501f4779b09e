"""Whether the mypyc-compiled hot path runs, and the import hook that runs the Python source
instead (``ORBITMQ_PURE=1``, or a compiled build older than its sources).

The build (setup.py) compiles the modules listed in compiled-modules.txt into extension
modules beside their ``.py`` files and writes ``mypyc-build.json`` into this package: each
compiled module and the SHA-256 of the source it was compiled from. Python's own finder
prefers an extension module to a source file of the same name, so without this hook the
extension would load even after its source was edited. The mypyc modules are one group: they
call each other's functions and classes directly, so loading some compiled and some from source
would leave compiled callers bound to compiled classes while the rest of the process uses the
source's. Hence the choice here is all or nothing: every module of the build runs compiled, or
(pure switch, any source changed since the build, no build) every one runs from its source.

``orbitmq/__init__.py`` calls :func:`install` once, before any other orbitmq module is
imported. This module is never compiled and imports only the standard library (setup.py
loads it by path, in a build environment without the package's dependencies). The decision
is made once per process and is read-only after that, so reading it is thread safe.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Final

#: Set to 1 to run every compiled module from its Python source, without rebuilding.
PURE_ENV: Final = "ORBITMQ_PURE"
#: Written by setup.py beside this module: {"modules": {module name: SHA-256 of its source}}.
MANIFEST_NAME: Final = "mypyc-build.json"
_PACKAGE_DIR: Final = Path(__file__).resolve().parent
_PREFIX: Final = "orbitmq."


@dataclass(frozen=True, slots=True)
class BuildState:
    """What this process runs: the compiled modules (empty when pure) and why, in words."""

    compiled: tuple[str, ...]
    description: str
    #: The warning printed once when a stale build forced pure Python, else None.
    warning: str | None = None


def source_digest(path: Path) -> str:
    """The SHA-256 of a module's source, as setup.py records it at build time."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def module_source(package_dir: Path, module: str) -> Path:
    """The ``.py`` file of ``module`` (``orbitmq.store.commit_log``) under ``package_dir``."""
    return package_dir.joinpath(*module.removeprefix(_PREFIX).split(".")).with_suffix(".py")


def write_manifest(package_dir: Path, modules: Sequence[str], out_dir: Path) -> None:
    """Record in ``out_dir`` (a built package directory) the digests of ``modules``' sources
    under ``package_dir``: setup.py calls this once the extensions are built."""
    digests = {m: source_digest(module_source(package_dir, m)) for m in sorted(modules)}
    (out_dir / MANIFEST_NAME).write_text(json.dumps({"modules": digests}, indent=2) + "\n")


def decide(package_dir: Path, pure_env: str | None) -> BuildState:
    """Compiled or pure, from the switch, the manifest in ``package_dir`` and the sources."""
    manifest = package_dir / MANIFEST_NAME
    if not manifest.exists():
        return BuildState((), "pure Python (no compiled build)")
    built: dict[str, str] = json.loads(manifest.read_text(encoding="utf-8"))["modules"]
    if pure_env == "1":
        return BuildState((), f"pure Python ({PURE_ENV}=1; {len(built)} modules were compiled)")
    for module, digest in sorted(built.items()):
        source = module_source(package_dir, module)
        if not source.exists() or source_digest(source) != digest:
            warning = (
                f"orbitmq: {source} changed after the compiled build: running all "
                f"{len(built)} compiled modules as pure Python; rebuild with `make` "
                f"(or `pip install -e .`)"
            )
            return BuildState((), f"pure Python (stale compiled build: {module})", warning)
    return BuildState(tuple(sorted(built)), f"compiled: {len(built)} modules (mypyc)")


class SourceFinder:
    """A meta path finder that loads an orbitmq module from its ``.py`` file wherever the
    path holds an extension module of the same name that is not part of the running build:
    every compiled module when pure, and leftovers of an earlier build with another list."""

    def __init__(self, compiled: Sequence[str]) -> None:
        self._compiled = frozenset(compiled)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith(_PREFIX) or fullname in self._compiled:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            return spec
        source = Path(spec.loader.path).parent / f"{fullname.rpartition('.')[2]}.py"
        if not source.exists():  # an extension of its own, not a compiled source
            return spec
        return importlib.util.spec_from_file_location(fullname, source)


_state: BuildState | None = None


def install() -> BuildState:
    """Decide once per process, print the stale-build warning, and put the finder first."""
    global _state  # noqa: PLW0603 - the one decision per process, made on first import
    if _state is None:
        _state = decide(_PACKAGE_DIR, os.environ.get(PURE_ENV))
        if _state.warning is not None:
            print(_state.warning, file=sys.stderr)
        sys.meta_path.insert(0, SourceFinder(_state.compiled))
    return _state


def state() -> BuildState:
    """The decision :func:`install` made."""
    return install()

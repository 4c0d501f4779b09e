"""The mypyc build and its run-time switch (orbitmq/_compiled.py): what loads compiled, the
pure switch, and the fallback to pure Python when a compiled module's source changed.

``make test`` runs the suite with ``ORBITMQ_PURE=0`` (a compiled build must be loaded) and its
pure smoke set with ``ORBITMQ_PURE=1``; without the variable (a source tree never built) the
tests that need a build are skipped. The stale build is tried on a copy of the package, never
on the tree itself.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import os
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import orbitmq
from orbitmq import _compiled

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = Path(orbitmq.__file__).resolve().parent
EXPECTED = os.environ.get(_compiled.PURE_ENV)


def listed_modules() -> list[str]:
    """compiled-modules.txt's modules, as setup.py reads them (its setup() runs only as a
    script)."""
    read: Callable[[], list[str]] = runpy.run_path(str(ROOT / "setup.py"))["compiled_modules"]
    return sorted(read())


def needs_build() -> None:
    if not (PACKAGE_DIR / _compiled.MANIFEST_NAME).exists():
        if EXPECTED == "0":
            pytest.fail("ORBITMQ_PURE=0 but no compiled build: `make` builds it")
        pytest.skip("no compiled build (`make`, or `pip install -e .`, builds it)")


def loaded_from(names: list[str], env: dict[str, str], pythonpath: Path) -> subprocess.Popen[str]:
    """A fresh interpreter that imports ``names`` and prints each one's file, one a line."""
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    print(importlib.import_module(name).__file__)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, *names],
        env={**os.environ, **env, "PYTHONPATH": str(pythonpath)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def write_package(root: Path, sources: dict[str, str]) -> Path:
    package = root / "orbitmq"
    for module, text in sources.items():
        path = _compiled.module_source(package, module)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_a_build_of_current_sources_runs_compiled(tmp_path: Path) -> None:
    modules = ["orbitmq.store.a", "orbitmq.common.b"]
    package = write_package(tmp_path, {m: f"X = {i}\n" for i, m in enumerate(modules)})
    _compiled.write_manifest(package, modules, package)
    state = _compiled.decide(package, None)
    assert state.compiled == ("orbitmq.common.b", "orbitmq.store.a")
    assert state.warning is None
    assert _compiled.decide(package, "0").compiled == state.compiled


def test_the_switch_runs_pure_without_a_warning(tmp_path: Path) -> None:
    package = write_package(tmp_path, {"orbitmq.store.a": "X = 1\n"})
    _compiled.write_manifest(package, ["orbitmq.store.a"], package)
    state = _compiled.decide(package, "1")
    assert state.compiled == ()
    assert state.warning is None
    assert "ORBITMQ_PURE=1" in state.description


def test_one_changed_source_runs_all_pure_and_names_it_and_the_fix(tmp_path: Path) -> None:
    modules = ["orbitmq.store.a", "orbitmq.store.b", "orbitmq.store.c"]
    package = write_package(tmp_path, dict.fromkeys(modules, "X = 1\n"))
    _compiled.write_manifest(package, modules, package)
    with _compiled.module_source(package, "orbitmq.store.b").open("a") as source:
        source.write("Y = 2\n")
    state = _compiled.decide(package, None)
    assert state.compiled == ()
    assert state.warning is not None
    assert "\n" not in state.warning
    assert str(_compiled.module_source(package, "orbitmq.store.b")) in state.warning
    assert "all 3 compiled modules" in state.warning
    assert "`make`" in state.warning
    assert "pip install -e ." in state.warning


def test_no_manifest_is_pure_python(tmp_path: Path) -> None:
    state = _compiled.decide(write_package(tmp_path, {"orbitmq.store.a": "X = 1\n"}), None)
    assert state.compiled == ()
    assert "no compiled build" in state.description


def test_this_run_loads_what_orbitmq_pure_asks_for() -> None:
    if EXPECTED not in ("0", "1"):
        pytest.skip("ORBITMQ_PURE unset: `make test` sets it, 0 for the suite, 1 for the smoke")
    needs_build()
    modules = listed_modules()
    loaders = {type(importlib.import_module(m).__loader__) for m in modules}
    if EXPECTED == "0":
        assert sorted(orbitmq.compiled_modules()) == modules
        assert loaders == {importlib.machinery.ExtensionFileLoader}
    else:
        assert orbitmq.compiled_modules() == ()
        assert loaders == {importlib.machinery.SourceFileLoader}


def test_the_pure_switch_loads_every_compiled_modules_source() -> None:
    needs_build()
    modules = listed_modules()
    process = loaded_from(modules, {_compiled.PURE_ENV: "1"}, PACKAGE_DIR.parent)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert err == ""
    files = out.splitlines()
    assert files == [str(_compiled.module_source(PACKAGE_DIR, m)) for m in modules]


def test_a_stale_build_falls_back_to_pure_with_one_warning(tmp_path: Path) -> None:
    needs_build()
    copy = tmp_path / "site"
    shutil.copytree(PACKAGE_DIR, copy / "orbitmq", ignore=shutil.ignore_patterns("__pycache__"))
    for group_library in PACKAGE_DIR.parent.glob("orbitmq__mypyc.*"):
        shutil.copy2(group_library, copy)
    modules = listed_modules()
    edited = _compiled.module_source(copy / "orbitmq", "orbitmq.store.commit_log")
    with edited.open("a") as source:
        source.write("\n# edited after the build\n")

    process = loaded_from(modules, {_compiled.PURE_ENV: "0"}, copy)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out.splitlines() == [str(_compiled.module_source(copy / "orbitmq", m)) for m in modules]
    (warning,) = err.splitlines()
    assert str(edited) in warning
    assert "`make`" in warning

    # The untouched copy is a current build: it loads every module compiled.
    with edited.open("w") as source:
        source.write((PACKAGE_DIR / "store" / "commit_log.py").read_text())
    process = loaded_from(modules, {_compiled.PURE_ENV: "0"}, copy)
    out, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (0, "")
    assert all(Path(file).suffix == ".so" for file in out.splitlines())


def test_the_manifest_is_the_list_of_compiled_modules() -> None:
    needs_build()
    manifest = json.loads((PACKAGE_DIR / _compiled.MANIFEST_NAME).read_text())
    assert sorted(manifest["modules"]) == listed_modules()

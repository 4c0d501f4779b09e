"""Build hooks: compile the gRPC API's .proto files (src/orbitmq/proxy/v2) with grpcio-tools,
and the hot path's modules (compiled-modules.txt) with mypyc.

The generated modules (``*_pb2.py`` and their ``.pyi`` stubs) are never committed. A wheel gets
them in its build directory; an editable install (what ``make`` does) writes them next to the
.proto files, so that ``PYTHONPATH=src`` works too.

The mypyc extensions land the same way: beside their ``.py`` sources (editable) or in the
wheel, which keeps the sources too. With them goes ``orbitmq/mypyc-build.json``, each compiled
module and the SHA-256 of the source it was built from: ``orbitmq/_compiled.py`` runs the
sources instead when one changed since (or when ``ORBITMQ_PURE=1``). mypyc runs only when
build_ext does, not for pip's metadata steps. Everything else is in pyproject.toml."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SRC = ROOT / "src"
PROTO_DIR = Path("orbitmq") / "proxy" / "v2"
#: The one list of compiled modules, one dotted name a line (the Makefile reads it too).
COMPILED_LIST = ROOT / "compiled-modules.txt"
#: mypyc's generated C and its type-check cache (git-ignored, removed by `make clean`).
MYPYC_DIR = ROOT / "build" / "mypyc"
#: The manifest's format and the run-time switch that reads it (stdlib only, loaded by path).
COMPILED_SWITCH = runpy.run_path(str(SRC / "orbitmq" / "_compiled.py"))
# The build's own type check, not the project's (`mypy` in `make test` is strict): pip's
# build environment holds only [build-system] requires, so numpy, orjson and the rest are
# missing there and count as Any, and errors in the modules the compiled ones import are
# not this build's business. The compiled code is the same: mypyc calls into those
# libraries as Python objects either way.
MYPYC_FLAGS = [
    "--ignore-missing-imports",
    "--follow-imports=silent",
    "--no-warn-return-any",
    f"--cache-dir={MYPYC_DIR / 'mypy_cache'}",
]


def compile_protos(out_root: Path) -> None:
    """Compile every .proto under src/orbitmq/proxy/v2 into ``out_root`` (package layout kept)."""
    # Imported here: grpcio-tools is a build requirement only, absent at run time.
    import grpc_tools  # noqa: PLC0415
    from grpc_tools import protoc  # noqa: PLC0415

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    protos = sorted(str(p.relative_to(SRC)) for p in (SRC / PROTO_DIR).glob("*.proto"))
    (out_root / PROTO_DIR).mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{SRC}",
        f"-I{well_known}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed: {' '.join(args)}")


def compiled_modules() -> list[str]:
    """compiled-modules.txt's module names (blank lines and ``#`` comments skipped)."""
    lines = (line.partition("#")[0].strip() for line in COMPILED_LIST.read_text().splitlines())
    return [line for line in lines if line]


class BuildPyWithProtos(build_py):
    """build_py that compiles the .proto files first (in place for editable installs)."""

    def run(self) -> None:
        editable = bool(getattr(self, "editable_mode", False))
        compile_protos(SRC if editable else Path(self.build_lib))
        super().run()


class BuildMypyc(build_ext):
    """build_ext that compiles compiled-modules.txt with mypyc and writes the manifest."""

    def finalize_options(self) -> None:
        # Imported here: mypy is a build requirement only, absent at run time.
        from mypyc.build import mypycify  # noqa: PLC0415

        sources = [
            os.path.relpath(COMPILED_SWITCH["module_source"](SRC / "orbitmq", m))
            for m in compiled_modules()
        ]
        self.distribution.ext_modules = mypycify(
            [*MYPYC_FLAGS, *sources], group_name="orbitmq", target_dir=str(MYPYC_DIR)
        )
        if self.parallel is None:  # the per-module C files compile side by side
            self.parallel = os.cpu_count() or 1
        super().finalize_options()

    def run(self) -> None:
        super().run()
        inplace = self.inplace or bool(getattr(self, "editable_mode", False))
        out_dir = (SRC if inplace else Path(self.build_lib)) / "orbitmq"
        COMPILED_SWITCH["write_manifest"](SRC / "orbitmq", compiled_modules(), out_dir)


class CompiledDistribution(Distribution):
    """Has extension modules before build_ext has made them (mypycify runs there)."""

    def has_ext_modules(self) -> bool:
        return True


if __name__ == "__main__":
    setup(
        distclass=CompiledDistribution,
        cmdclass={"build_py": BuildPyWithProtos, "build_ext": BuildMypyc},
    )

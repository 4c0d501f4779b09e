"""Build hook: compile the gRPC API's .proto files (src/orbitmq/proxy/v2) with grpcio-tools.

The generated modules (``*_pb2.py`` and their ``.pyi`` stubs) are never committed. A wheel gets
them in its build directory; an editable install (what ``make`` does) writes them next to the
.proto files, so that ``PYTHONPATH=src`` works too. Everything else is in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SRC = Path(__file__).resolve().parent / "src"
PROTO_DIR = Path("orbitmq") / "proxy" / "v2"


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


class BuildPyWithProtos(build_py):
    """build_py that compiles the .proto files first (in place for editable installs)."""

    def run(self) -> None:
        editable = bool(getattr(self, "editable_mode", False))
        compile_protos(SRC if editable else Path(self.build_lib))
        super().run()


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildPyWithProtos})

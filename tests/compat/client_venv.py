"""Virtualenvs holding real RocketMQ client packages, made on demand under ``.venv-compat/``.

Each client package imports as ``rocketmq``, so each gets its own virtualenv under
``.venv-compat/<name>`` in the repository root, made once (from PyPI) and reused while its
requirement is unchanged. A plain module (not a conftest) so that benchmarks can use it too:
``from tests.compat.client_venv import compat_venv, CPP_CVS_REQUIREMENT``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPAT_VENVS = REPO_ROOT / ".venv-compat"
#: rocketmq-python-cvs bundles the official C++ client 2.1.0 (librocketmq.so; needs only
#: libstdc++ and zlib from the system).
CPP_CVS_REQUIREMENT = "rocketmq-python-cvs==2.1.0.3"
#: rocketmq 0.4.4 bundles the older C++ client 1.x, which sends with SEND_MESSAGE (10). Its
#: Python API is the one ``clients/`` uses (it lacks only ``set_log_root_path``).
CPP_044_REQUIREMENT = "rocketmq==0.4.4"
#: The official RocketMQ 5 Python client (gRPC, apache.rocketmq.v2), pure Python; it ships
#: its compiled .proto descriptors as ``rocketmq.grpc_protocol``.
PYTHON_5X_REQUIREMENT = "rocketmq-python-client==5.1.2"
#: What each client package must import for its virtualenv to count as made.
CPP_IMPORT_CHECK = "import rocketmq.client"
PYTHON_5X_IMPORT_CHECK = "from rocketmq import Producer, SimpleConsumer, PushConsumer"


def compat_venv(name: str, requirement: str, import_check: str = CPP_IMPORT_CHECK) -> Path:
    """The Python of ``.venv-compat/<name>`` with ``requirement`` installed, made if needed;
    ``import_check`` is the Python statement that proves the package works (the 4.x C++
    clients' ``rocketmq.client`` by default).

    A stamp holding the requirement is written last: a half-made or outdated virtualenv is
    removed and made again. Each step is bounded (10 minutes); a failed step raises
    ``AssertionError`` with its output."""
    root = COMPAT_VENVS / name
    python = root / "bin" / "python"
    stamp = root / ".installed"
    if stamp.is_file() and stamp.read_text() == requirement and python.exists():
        return python
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        [sys.executable, "-m", "venv", str(root)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement],
        [str(python), "-c", import_check],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, f"{step}: {result.stdout}{result.stderr}"
    stamp.write_text(requirement)
    return python

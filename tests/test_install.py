"""Install and versions (issue 8, part D): the CPU-index probe the Makefile uses, the
`make test-torch` target, and pyproject metadata that setuptools accepts without warnings."""

from __future__ import annotations

import http.server
import importlib.util
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from .fixtures import needs

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tools" / "torch_index.py"
GENEROUS = 30.0  # seconds: only catches a probe that hangs, never a timing measurement


def _load_probe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torch_index", PROBE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def torch_index() -> ModuleType:
    return _load_probe()


class _Index(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = 200 if self.path == "/whl/cpu/torch/" else 404
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b"<html></html>")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index_server() -> Iterator[str]:
    """A local index that has torch at /whl/cpu/."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers (a firewall that swallows packets looks the same)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/whl/cpu"
    sock.close()


def test_probe_finds_a_reachable_index(torch_index: ModuleType, index_server: str) -> None:
    assert torch_index.probe(f"{index_server}/whl/cpu", timeout=10) == "reachable"
    assert torch_index.pip_args(f"{index_server}/whl/cpu", timeout=10) == ["--index-url", f"{index_server}/whl/cpu"]


def test_probe_rejects_an_index_without_torch(torch_index: ModuleType, index_server: str) -> None:
    assert torch_index.probe(f"{index_server}/other", timeout=10) == "unreachable"
    assert torch_index.probe("", timeout=10) == "unreachable"  # make TORCH_INDEX= turns it off


def test_probe_of_a_silent_server_gives_up(torch_index: ModuleType, silent_server: str) -> None:
    start = time.monotonic()
    assert torch_index.probe(silent_server, timeout=0.5) == "unreachable"
    assert time.monotonic() - start < GENEROUS
    assert torch_index.pip_args(silent_server, timeout=0.5) == []


def test_probe_gives_up_on_a_hanging_name_lookup(torch_index: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    # urllib's timeout does not cover DNS: a resolver that never answers must not hang setup
    release = threading.Event()

    def hanging_getaddrinfo(*args: object, **kwargs: object) -> list[object]:
        release.wait(120)
        raise socket.gaierror("test resolver gave up")

    monkeypatch.setattr(socket, "getaddrinfo", hanging_getaddrinfo)
    start = time.monotonic()
    try:
        assert torch_index.probe("https://download.pytorch.org/whl/cpu", timeout=0.5) == "unreachable"
        assert time.monotonic() - start < GENEROUS
    finally:
        release.set()


def test_probe_script_prints_pip_options(index_server: str, silent_server: str) -> None:
    def run(url: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(PROBE), url, "--timeout", "2"], capture_output=True, text=True, timeout=GENEROUS * 2
        )

    found = run(f"{index_server}/whl/cpu")
    assert found.returncode == 0
    assert found.stdout.split() == ["--index-url", f"{index_server}/whl/cpu"]
    missing = run(silent_server)
    assert missing.returncode == 0
    assert missing.stdout.strip() == ""
    assert "did not answer" in missing.stderr  # says what it does instead


@pytest.mark.skipif(shutil.which("make") is None, reason=needs.MAKE)
def test_setup_installs_torch_through_the_probe(tmp_path: Path) -> None:
    out = subprocess.run(
        ["make", "-n", "-B", f"{tmp_path}/v/.installed", f"VENV={tmp_path}/v", "TORCH=torch==9.9"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    torch_line = only(line for line in out.splitlines() if "torch==9.9" in line)
    assert "tools/torch_index.py" in torch_line and "https://download.pytorch.org/whl/cpu" in torch_line
    assert out.index("torch==9.9") < out.index("-e '.[dev]'")  # torch first: nothing else picks a CUDA build


@pytest.mark.skipif(shutil.which("make") is None, reason=needs.MAKE)
def test_make_test_torch_uses_its_own_virtualenv() -> None:
    out = subprocess.run(
        ["make", "-n", "test-torch", "TORCH=torch==9.9"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"\.venv-torch/bin/python -m pip install -q \"torch==9\.9\"", out)
    assert ".venv-torch/bin/python -m pytest" in out
    assert ".venv/bin/python" not in out.replace(".venv-torch/", "")  # the CI virtualenv is left alone
    assert ".venv-torch/" in (ROOT / ".gitignore").read_text().split()


def test_readme_says_where_torch_comes_from() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "https://download.pytorch.org/whl/cpu" in readme
    assert "make test-torch" in readme


def test_license_is_an_spdx_string() -> None:
    tomllib = pytest.importorskip("tomllib", reason=needs.TOMLLIB)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "MIT"  # a table is deprecated by setuptools
    for name in pyproject["project"]["license-files"]:
        assert "MIT License" in (ROOT / name).read_text()
    (setuptools,) = [r for r in pyproject["build-system"]["requires"] if r.startswith("setuptools")]
    minimum = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools.replace(" ", ""))
    assert minimum and int(minimum.group(1)) >= 77  # the first setuptools that takes SPDX strings


def only(items: Iterator[str]) -> str:
    (item,) = list(items)
    return item


# -- the lock (issue 18): what passed yesterday passes today ------------------------------------
LOCK = ROOT / "requirements" / "lock.txt"


def locked() -> dict[str, str]:
    from tools.lock import read

    return read(LOCK)


def test_the_lock_pins_every_dev_and_bench_requirement_exactly() -> None:
    tomllib = pytest.importorskip("tomllib", reason=needs.TOMLLIB)
    from tools.lock import norm

    lines = [line for line in LOCK.read_text().splitlines() if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[a-z0-9-]+==[\w.+!-]+", line) for line in lines), "a lock line is not name==version"
    pins = locked()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    wanted = {norm(re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]) for name in ("dev", "bench") for r in extras[name]}
    assert wanted <= pins.keys(), f"not locked: {sorted(wanted - pins.keys())}"
    assert {"pip", "setuptools", "graphviz"} <= pins.keys()  # the installer, the build backend, a runtime dependency
    assert "torch" not in pins and not any(n.startswith("nvidia-") for n in pins)  # torch is pinned by TORCH


@pytest.mark.skipif(shutil.which("make") is None, reason=needs.MAKE)
def test_setup_installs_everything_but_torch_from_the_lock(tmp_path: Path) -> None:
    out = subprocess.run(
        ["make", "-n", "-B", f"{tmp_path}/v/.installed", f"VENV={tmp_path}/v"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    installs = [line for line in out.splitlines() if " -m pip install " in line]
    dev = only(line for line in installs if "-e '.[dev]'" in line)
    assert "-c requirements/lock.txt" in dev and "--no-build-isolation" in dev
    assert "-c requirements/lock.txt" in installs[0] and "pip setuptools" in installs[0]  # pinned before building
    torch_line = only(line for line in installs if "torch==" in line)
    assert "-c " not in torch_line  # torch's own pin decides; its dependencies are locked by the next step


@pytest.mark.skipif(shutil.which("make") is None, reason=needs.MAKE)
def test_make_test_latest_takes_the_newest_versions_in_its_own_virtualenv() -> None:
    out = subprocess.run(
        ["make", "-n", "-B", "test-latest"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    out = out.replace("\\\n", " ")  # one line per command
    assert "VENV=.venv-latest LOCK=" in out
    upgrade = only(line for line in out.splitlines() if "-e '.[dev,bench]'" in line)
    assert "--upgrade" in upgrade and "--upgrade-strategy eager" in upgrade
    assert "requirements/lock.txt" not in out.replace("tools/lock.py drift", "")
    assert ".venv-latest/bin/python -m pytest" in out
    assert ".venv-latest/" in (ROOT / ".gitignore").read_text().split()

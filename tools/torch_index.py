"""Which index should pip install torch from?  (used by the Makefile)

PyTorch's own CPU wheel index (https://download.pytorch.org/whl/cpu) has CPU-only
builds; the Linux wheels on PyPI pull about 18 CUDA packages (several GB). This script
asks the CPU index for torch's page, with a short bound on the whole probe (DNS included),
so a machine that cannot reach it (offline, a registry mirror only) does not hang.

    python tools/torch_index.py [URL] [--timeout SECONDS]

prints the pip options to add to `pip install torch==...`: `--index-url URL` when the
index answers, nothing otherwise (pip then uses its configured index, as before).
A line on stderr says which. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import sys
import threading
import urllib.request

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TIMEOUT = 3.0


def probe(url: str = CPU_INDEX, timeout: float = TIMEOUT) -> str:
    """'reachable' if ``url``/torch/ answers 200 within about ``timeout`` seconds, else 'unreachable'.

    The request runs in a daemon thread joined with ``timeout``: urllib's own timeout
    does not cover name resolution, which can block far longer on a machine without DNS.
    """
    result: list[str] = []

    def ask() -> None:
        try:
            req = urllib.request.Request(url.rstrip("/") + "/torch/", method="GET")
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                if resp.status == 200:
                    result.append("reachable")
        except Exception:  # any failure (DNS, refused, TLS, HTTP error) means: do not use it
            pass

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    worker.join(timeout)
    return result[0] if result else "unreachable"


def pip_args(url: str = CPU_INDEX, timeout: float = TIMEOUT) -> list[str]:
    """The options for `pip install torch==...`: the CPU index where it answers, else none."""
    if probe(url, timeout) == "reachable":
        print(f"torch: installing a CPU build from {url}", file=sys.stderr)
        return ["--index-url", url]
    print(
        f"torch: {url} did not answer (probe limit {timeout:g} s); installing torch from pip's "
        "configured index (on Linux, PyPI's torch pulls CUDA packages unless a CPU wheel "
        "is available locally)",
        file=sys.stderr,
    )
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", default=CPU_INDEX)
    parser.add_argument("--timeout", type=float, default=TIMEOUT)
    args = parser.parse_args(argv)
    print(" ".join(pip_args(args.url, args.timeout)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The lock of the test set-up: exact versions of every package `make test` installs.

`requirements/lock.txt` is a pip *constraints* file: `pip install -c requirements/lock.txt
-e '.[dev]'` installs what pyproject.toml asks for, at the versions listed, so a new
release on PyPI cannot change what `make test` runs.  The library's own requirements stay
ranges in pyproject.toml (users install tensorview beside their own versions); torch is
pinned by the Makefile (`TORCH`), so it is not in the lock.

    python tools/lock.py write VENV_PYTHON [LOCK]   # the lock from a virtualenv (`make lock`)
    python tools/lock.py drift VENV_PYTHON [LOCK]   # what a virtualenv has that the lock does not

`make lock` writes it from `.venv-latest`, the virtualenv `make test-latest` fills with the
newest versions and tests; commit the lock after `make test-latest` passes.  Standard
library only.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

LOCK = Path(__file__).resolve().parent.parent / "requirements" / "lock.txt"

#: never locked: torch is pinned on its own (`TORCH`), with its CUDA companions where pip
#: took a CUDA build; the project itself is installed editable
UNLOCKED = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*|tensorview)$")

HEADER = """\
# Exact versions of everything `make test` (and `make bench`) installs besides torch:
# a pip constraints file, used as `pip install -c requirements/lock.txt ...` by the Makefile.
# Written by `make lock` (tools/lock.py) from the newest versions `make test-latest` tested:
# regenerate it there, never by hand.  Python {python}.
"""


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def frozen(python: str) -> dict[str, str]:
    """``{name: version}`` of every distribution installed in the virtualenv of ``python``."""
    out = subprocess.run(
        [python, "-m", "pip", "list", "--format=freeze", "--exclude-editable", "--disable-pip-version-check"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    pins: dict[str, str] = {}
    for line in out.splitlines():
        name, sep, version = line.partition("==")
        if sep and not UNLOCKED.match(norm(name)):
            pins[norm(name)] = version.strip()
    return pins


def read(lock: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[norm(name)] = version.strip()
    return pins


def write(python: str, lock: Path) -> None:
    pins = frozen(python)
    version = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], check=True, capture_output=True, text=True
    ).stdout.strip()
    lock.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{name}=={pins[name]}\n" for name in sorted(pins))
    lock.write_text(HEADER.format(python=version) + body, encoding="utf-8")
    print(f"{lock}: {len(pins)} packages")


def drift(python: str, lock: Path) -> int:
    """Print the packages whose installed version differs from the lock; the count."""
    have, locked = frozen(python), read(lock) if lock.exists() else {}
    changed = sorted(n for n in have.keys() & locked.keys() if have[n] != locked[n])
    for n in changed:
        print(f"  {n}: {locked[n]} (locked) -> {have[n]}")
    for n in sorted(have.keys() - locked.keys()):
        print(f"  {n}: not locked -> {have[n]}")
    if not changed and not have.keys() - locked.keys():
        print("  the newest versions are the locked ones")
    return len(changed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("command", choices=("write", "drift"))
    parser.add_argument("python", help="the python of the virtualenv to read")
    parser.add_argument("lock", nargs="?", type=Path, default=LOCK)
    args = parser.parse_args(argv)
    if args.command == "write":
        write(args.python, args.lock)
    else:
        print(f"versions in {args.python} against {args.lock}:")
        drift(args.python, args.lock)
    return 0


if __name__ == "__main__":
    sys.exit(main())

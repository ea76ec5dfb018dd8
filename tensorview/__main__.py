"""``python -m tensorview``: the ``tensorview`` command (see tensorview/cli)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())

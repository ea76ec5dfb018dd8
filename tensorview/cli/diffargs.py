"""The arguments of ``tensorview diff`` and ``tensorview fingerprint`` (run by diffcmd.py):
built without torch, like every parser of the command (``tensorview --help`` imports none)."""

from __future__ import annotations

import argparse
from typing import Any

from ..compare.report import KINDS, LAYOUTS, LEVELS


def add_parsers(commands: Any, add_target_options: Any, add_general_options: Any) -> dict[str, Any]:
    """Register ``diff`` and ``fingerprint`` on the subparsers ``commands``; their parsers."""
    p = commands.add_parser(
        "diff",
        help="compare two models or saved graphs (exit 0 identical, 1 different)",
        description="Architecture diff of two targets: modules matched by path, then by structure; "
        "ops aligned inside matched modules. Exit 0 identical, 1 different, 2 usage error.",
    )
    add_target_options(p)
    _rename_target(p, "A", "the first model: a target (see draw) or a saved graph .json")
    p.add_argument("other", metavar="B", help="the second model: a target or a saved graph .json")
    g = p.add_argument_group("diff")
    g.add_argument("--level", choices=LEVELS, default="module", help="module: one line per module; op: every op edit")
    g.add_argument(
        "--ignore", metavar="KIND,...", default="", help=f"kinds of differences to leave out: {', '.join(KINDS)}"
    )
    g.add_argument(
        "-o", "--output", metavar="PATH", help="also write the diff: .json, .txt, .html, .svg, .gv, .png, .pdf"
    )
    g.add_argument(
        "--stats",
        action="store_true",
        help="record with the cost probe and compare each module's own FLOPs and saved bytes, and the totals",
    )
    g.add_argument("--depth", type=int, default=None, help="deepest module level drawn in a picture")
    g.add_argument(
        "--layout",
        choices=LAYOUTS,
        default=None,
        help="a picture's layout: merged (one graph, the union of both: the default of pictures) "
        "or side (both side by side); .html also takes viewer (both graphs in the interactive viewer, "
        "opening and selection kept in step: its default)",
    )
    add_general_options(p)
    f = commands.add_parser("fingerprint", help="print a structural hash of the architecture (same model, same hash)")
    add_target_options(f)
    _rename_target(f, "TARGET", "the model: a target (see draw) or a saved graph .json")
    add_general_options(f)
    return {"diff": p, "fingerprint": f}


def _rename_target(p: argparse.ArgumentParser, metavar: str, text: str) -> None:
    for action in p._actions:
        if action.dest == "target":
            action.metavar, action.help = metavar, text


__all__ = ["add_parsers"]

"""DOT quoting and attribute lists: the one place where text becomes DOT syntax."""

from __future__ import annotations

import re
from collections.abc import Mapping

_ID = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))\Z")
_KEYWORDS = frozenset({"node", "edge", "graph", "digraph", "subgraph", "strict"})


def quote(text: str) -> str:
    """``text`` as a DOT ID: bare when it is a plain identifier or numeral, else double-quoted with
    backslashes, quotes and line breaks escaped (a line break becomes DOT's ``\\n``)."""
    if _ID.match(text) and text.lower() not in _KEYWORDS:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n") + '"'


def attr_list(attrs: Mapping[str, object]) -> str:
    """`` [k=v k2="v 2"]`` in insertion order, or ``""`` when empty; ``None`` values are skipped."""
    parts = [f"{quote(str(k))}={quote(_text(v))}" for k, v in attrs.items() if v is not None]
    return " [" + " ".join(parts) + "]" if parts else ""


def _text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)

"""A plain-text listing of the graph, one row per node (``Graph.table()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .nodes import FunctionNode, ModuleNode, Shape, TensorNode, unhandled

if TYPE_CHECKING:
    from .graph import Graph

HEADER = ("name", "kind", "path", "op", "input shapes", "output shapes")
#: names longer than this are shortened with an ellipsis in text output and DOT labels
MAX_TEXT = 200


def printable(text: str) -> str:
    """``text`` on one line: each character that is not printable (line breaks, tabs,
    control characters, lone surrogates) as its Python escape (``\\n``, ``\\x00``, ``\\ud800``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def shorten(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis, when it is longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str) -> str:
    """A name as text output shows it: one line (``printable``), at most ``MAX_TEXT`` characters."""
    return shorten(printable(text))


def fmt_shape(shape: Shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def fmt_shapes(shapes: list[Shape]) -> str:
    return ", ".join(fmt_shape(s) for s in shapes)


def rows(g: Graph) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for n in g.nodes:
        match n:
            case TensorNode():
                op, ins, outs = n.role, "", fmt_shape(n.shape)
            case FunctionNode() | ModuleNode():
                op = n.op if isinstance(n, FunctionNode) else n.cls_name + (f".{n.method}" if n.method else "")
                ins = fmt_shapes(g.shapes(g.input_tensors(n.id)))
                outs = fmt_shapes(g.shapes(g.output_tensors(n.id)))
            case _:
                unhandled(n)
        out.append((one_line(n.name), n.kind, one_line(n.path) or "''", one_line(op), ins, outs))
    return out


def table(g: Graph) -> str:
    body = rows(g)
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(lines)

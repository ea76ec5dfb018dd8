"""A plain-text listing of the graph, one row per node (``Graph.table()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .nodes import FunctionNode, ModuleNode, TensorNode, unhandled

if TYPE_CHECKING:
    from .graph import Graph

HEADER = ("name", "kind", "path", "op", "input shapes", "output shapes")


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def fmt_shapes(shapes: list[tuple[int, ...]]) -> str:
    return ", ".join(fmt_shape(s) for s in shapes)


def rows(g: Graph) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for n in g.nodes:
        match n:
            case TensorNode():
                op, ins, outs = n.role, "", fmt_shape(n.shape)
            case FunctionNode() | ModuleNode():
                op = n.op if isinstance(n, FunctionNode) else n.cls_name
                ins = fmt_shapes(g.shapes(g.input_tensors(n.id)))
                outs = fmt_shapes(g.shapes(g.output_tensors(n.id)))
            case _:
                unhandled(n)
        out.append((n.name, n.kind, n.path or "''", op, ins, outs))
    return out


def table(g: Graph) -> str:
    body = rows(g)
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(lines)

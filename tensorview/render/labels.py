"""The text of node labels, shared by every renderer (lines joined with ``\\n``)."""

from __future__ import annotations

import math
from typing import Any

from ..graph import MODULE, TENSOR, Graph
from ..graph.listing import fmt_shape
from ..transform.view import View, ViewNode

MAX_SHAPES = 4


def node_label(view: View, node: ViewNode) -> str:
    return "\n".join(label_lines(view, node))


def label_lines(view: View, node: ViewNode) -> list[str]:
    g, opts, ir = view.graph, view.options, node.ir
    if node.kind == MODULE:
        lines = [module_title(g, node)]
        if node.calls > 1:
            lines.append(f"×{node.calls} calls")
        if opts.show_shapes:
            last = node.members[-1] if node.members else node.id
            ins = _tensor_texts(g, g.input_tensors(node.id))
            outs = _tensor_texts(g, g.output_tensors(last))
            lines.append(f"{ins} → {outs}")
    elif node.kind == TENSOR:
        role = ir.role  # type: ignore[attr-defined]
        lines = [ir.source_name or ir.name]  # type: ignore[attr-defined]
        if role in ("parameter", "buffer"):
            lines.append(f"{fmt_shape(ir.shape)} {ir.dtype}")  # type: ignore[attr-defined]
            lines.append(f"{math.prod(ir.shape):,} elements")  # type: ignore[attr-defined]
        elif opts.show_shapes:
            lines.append(tensor_text(ir))
    else:
        lines = [ir.op]  # type: ignore[attr-defined]
        if node.calls > 1:
            lines.append(f"×{node.calls} calls")
        if opts.show_shapes:
            lines.append("→ " + _tensor_texts(g, g.output_tensors(node.id)))
    if ir.notes:
        lines.extend(f"{k}: {fmt_value(v)}" for k, v in ir.notes.items())
    if opts.number_nodes:
        lines[0] = f"#{node.index + 1} {lines[0]}"  # 1-based position in execution order
    return lines


def module_title(g: Graph, node: ViewNode) -> str:
    ir = node.ir
    cls = ir.cls_name  # type: ignore[attr-defined]
    if node.members:
        paths = [g.nodes[m].path for m in node.members]
        if node.period > 1:
            cls = ", ".join(g.nodes[m].cls_name for m in node.members[: node.period])  # type: ignore[attr-defined]
        return f"{span(paths)}: {cls} ×{node.folded}"
    return f"{ir.path}: {cls}" if ir.path else cls


def span(paths: list[str]) -> str:
    """``layers.0–79`` for ``layers.0`` ... ``layers.79``; ``a–b`` otherwise."""
    first, last = paths[0], paths[-1]
    head, _, a = first.rpartition(".")
    head2, _, b = last.rpartition(".")
    if head == head2 and a.isdigit() and b.isdigit():
        return f"{head}.{a}–{b}" if head else f"{a}–{b}"
    return f"{first}–{last}"


def tensor_text(t: Any) -> str:
    """``(1, 3, 224, 224)``, with the dtype when it is not float32."""
    text = fmt_shape(t.shape)
    return text if t.dtype == "float32" else f"{text} {t.dtype}"


def _tensor_texts(g: Graph, ids: list[int]) -> str:
    texts = [tensor_text(g.nodes[i]) for i in ids[:MAX_SHAPES]]
    if len(ids) > MAX_SHAPES:
        texts.append(f"…+{len(ids) - MAX_SHAPES}")
    return ", ".join(texts) if texts else "()"


def fmt_value(v: Any) -> str:
    """Floats with 4 significant digits; dicts as ``k=v`` pairs; lists comma-separated."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict):
        return " ".join(f"{k}={fmt_value(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_value(x) for x in v)
    if hasattr(v, "item") and callable(v.item) and getattr(v, "numel", lambda: 2)() == 1:
        return fmt_value(v.item())  # a one-element tensor or numpy scalar
    return str(v)

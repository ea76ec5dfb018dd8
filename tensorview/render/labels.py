"""The text of node labels, shared by every renderer (lines joined with ``\\n``)."""

from __future__ import annotations

import math
from typing import Any

from ..graph import FunctionNode, Graph, ModuleNode, TensorNode, View, ViewNode, unhandled
from ..graph.listing import fmt_shape
from .options import RenderOptions

MAX_SHAPES = 4


def node_label(view: View, node: ViewNode, options: RenderOptions | None = None) -> str:
    return "\n".join(label_lines(view, node, options))


def label_lines(view: View, node: ViewNode, options: RenderOptions | None = None) -> list[str]:
    g, shapes, ir = view.graph, view.options.show_shapes, node.ir
    match ir:
        case ModuleNode():
            lines = [module_title(g, node, ir)]
            if node.calls > 1:
                lines.append(f"×{node.calls} calls")
            if shapes:
                last = node.members[-1] if node.members else node.id
                ins = _tensor_texts(g, g.input_tensors(node.id))
                outs = _tensor_texts(g, g.output_tensors(last))
                lines.append(f"{ins} → {outs}")
        case TensorNode():
            lines = [ir.source_name or ir.name]
            if ir.is_param:
                lines.append(f"{fmt_shape(ir.shape)} {ir.dtype}")
                lines.append(f"{math.prod(ir.shape):,} elements")
            elif shapes:
                lines.append(tensor_text(ir))
        case FunctionNode():
            lines = [ir.op]
            if node.calls > 1:
                lines.append(f"×{node.calls} calls")
            if shapes:
                lines.append("→ " + _tensor_texts(g, g.output_tensors(node.id)))
        case _:
            unhandled(ir)
    notes = g.annotations.of(ir.id) if g.annotations else None
    if notes:
        lines.extend(f"{k}: {fmt_value(v)}" for k, v in notes.items())
    if options is not None and options.number_nodes:
        lines[0] = f"#{node.index + 1} {lines[0]}"  # 1-based position in execution order
    return lines


def module_title(g: Graph, node: ViewNode, ir: ModuleNode) -> str:
    cls = ir.cls_name
    if node.members:
        paths = [g.module(m).call_name for m in node.members]
        if node.period > 1:
            cls = ", ".join(g.module(m).cls_name for m in node.members[: node.period])
        return f"{span(paths)}: {cls} ×{node.folded}"
    return f"{ir.call_name}: {cls}" if ir.path else cls


def span(paths: list[str]) -> str:
    """``layers.0–79`` for ``layers.0`` ... ``layers.79``; ``a–b`` otherwise."""
    first, last = paths[0], paths[-1]
    head, _, a = first.rpartition(".")
    head2, _, b = last.rpartition(".")
    if head == head2 and a.isdigit() and b.isdigit():
        return f"{head}.{a}–{b}" if head else f"{a}–{b}"
    return f"{first}–{last}"


def tensor_text(t: TensorNode) -> str:
    """``(1, 3, 224, 224)``, with the dtype when it is not float32."""
    text = fmt_shape(t.shape)
    return text if t.dtype == "float32" else f"{text} {t.dtype}"


def _tensor_texts(g: Graph, ids: list[int]) -> str:
    texts = [tensor_text(g.tensor(i)) for i in ids[:MAX_SHAPES]]
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

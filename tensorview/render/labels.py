"""The text of node labels, shared by every renderer (lines joined with ``\\n``)."""

from __future__ import annotations

import math
import re
from typing import Any

from ..graph import (
    BACKWARD_LAYER,
    PARAM_ROLES,
    SOURCE_LAYER,
    FunctionNode,
    Graph,
    ModuleNode,
    TensorNode,
    View,
    ViewNode,
    unhandled,
)
from ..graph.listing import fmt_shape
from ..graph.view import fold_title, span
from .options import RenderOptions

__all__ = [
    "MAX_OP_INPUTS",
    "MAX_SHAPES",
    "OP_LINE",
    "fmt_value",
    "group_title",
    "label_lines",
    "module_title",
    "node_label",
    "span",
    "tensor_text",
]

MAX_SHAPES = 4
#: input shapes shown on an op (a ``cat`` of many tensors shows the first and ``…+47``)
MAX_OP_INPUTS = 2
#: an op's ``in → out`` line longer than this is split in two
OP_LINE = 48


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
        case TensorNode() if node.group:
            lines = [group_title(g, node.group)]
            if shapes:
                lines.append(_distinct_texts(g, node.group))
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
                lines.extend(_op_shapes(g, node.id))
        case _:
            unhandled(ir)
    notes = g.annotations.of(ir.id) if g.annotations else None
    if notes:
        lines.extend(f"{k}: {fmt_value(v)}" for k, v in notes.items() if k not in _UNLABELLED)
    if options is not None and options.number_nodes:
        lines[0] = f"#{node.index + 1} {lines[0]}"  # 1-based position in execution order
    return lines


_UNLABELLED = frozenset((SOURCE_LAYER, BACKWARD_LAYER))


def module_title(g: Graph, node: ViewNode, ir: ModuleNode) -> str:
    if node.members:
        return fold_title(g, node.members, node.period)
    return f"{ir.call_name}: {ir.cls_name}" if ir.path else ir.cls_name


_PART = re.compile(r"\.([^.\[]*)|\[([^\]]*)\]")


def group_title(g: Graph, ids: tuple[int, ...]) -> str:
    """``past_key_values (80 × 2 tensors)``: the field and how its tensors are arranged
    (one factor per level of the returned structure that varies, when they fill a grid)."""
    first = g.tensor(ids[0])
    field = first.field or first.source_name or first.name
    paths = []
    for i in ids:
        name = g.tensor(i).source_name or ""
        rest = name[len(field) :] if name.startswith(field) else name
        paths.append(tuple(m.group(0) for m in _PART.finditer(rest)))
    count = str(len(ids))
    if len({len(p) for p in paths}) == 1:
        sizes = [n for n in (len({p[k] for p in paths}) for k in range(len(paths[0]))) if n > 1]
        if len(sizes) > 1 and math.prod(sizes) == len(ids):
            count = " × ".join(str(n) for n in sizes)
    return f"{field} ({count} tensors)"


def _distinct_texts(g: Graph, ids: tuple[int, ...]) -> str:
    texts = list(dict.fromkeys(tensor_text(g.tensor(i)) for i in ids))
    more = f", …+{len(texts) - MAX_SHAPES}" if len(texts) > MAX_SHAPES else ""
    return ", ".join(texts[:MAX_SHAPES]) + more


def _op_shapes(g: Graph, node_id: int) -> list[str]:
    """``→ out``, or ``in → out`` when the op's tensor arguments (parameters left out)
    differ from its results in shape or dtype (``linear``: ``(1, 128, 8192) → (1, 128, 28672)``);
    at most ``MAX_OP_INPUTS`` input shapes (a ``cat`` of 48 tensors: ``(1, 64, 8, 8), …+47``),
    on a line of their own when one line would be longer than ``OP_LINE``."""
    outs = g.output_tensors(node_id)
    out = "→ " + _tensor_texts(g, outs)
    ins = [i for i in g.input_tensors(node_id) if g.tensor(i).role not in PARAM_ROLES]
    if not ins or {tensor_text(g.tensor(i)) for i in ins} == {tensor_text(g.tensor(i)) for i in outs}:
        return [out]
    texts = [tensor_text(g.tensor(i)) for i in ins[:MAX_OP_INPUTS]]
    if len(ins) > MAX_OP_INPUTS:
        texts.append(f"…+{len(ins) - MAX_OP_INPUTS}")
    text = ", ".join(texts)
    return [f"{text} {out}"] if len(text) + len(out) < OP_LINE else [text, out]


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

"""``ComputationGraph``: the recorded graph as users hold it.

It keeps the full recorded IR (``.graph``), what to show (``ViewOptions``), how to draw
it (``RenderOptions``) and the styler; ``view(**changes)`` gives another drawing of the
same recording without running the model again.  The view, DOT source, ``graphviz.Digraph``
and SVG are computed on first use and cached until the graph's annotations change.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import graphviz

from .compat.graph_api import TorchviewAPI, TorchviewExtras
from .errors import InvalidInputError, InvalidTypeError, RenderError, TensorviewError, choices_error, shown
from .graph import (
    VIEW_OPTION_NAMES,
    AnnotationPass,
    Graph,
    ModuleNode,
    Node,
    TensorNode,
    View,
    ViewOptions,
    annotate,
)
from .graph.listing import fmt_shapes, one_line, printable, shorten
from .render import RENDER_OPTION_NAMES, DotRenderer, GraphvizStyler, Interactive, RenderOptions, run_dot
from .render.formats import Format, extensions, format_for, formats
from .render.themes import checked_styler, styler_of_style
from .transform import build_view

if TYPE_CHECKING:  # the cost model is imported where a recording has costs (docs/architecture.md)
    from .cost.record import CostRecord
    from .cost.summary import Summary


class BackwardPair(Protocol):
    """``pair[False]``: the joint graph; ``pair[True]``: the backward alone (backward/join.py)."""

    def __getitem__(self, backward_only: bool, /) -> Graph: ...


#: how many module calls ``repr`` lists before summarising the rest
REPR_MODULES = 40
#: every option name ``view(...)`` and ``draw_graph`` accept
OPTION_NAMES = VIEW_OPTION_NAMES | RENDER_OPTION_NAMES


class ComputationGraph(TorchviewAPI):
    """A recorded forward pass, drawable in Jupyter (SVG) and savable to files, e.g.
    ``graph.view(depth=1, roll=True).save("model.svg")``.  torchview's attributes
    (``node_hierarchy``, ``edge_list``, ``traverse_graph``, ``resize_graph``...) come from
    ``compat.graph_api.TorchviewAPI``; ``extras`` holds what only they need."""

    def __init__(
        self,
        graph: Graph,
        options: ViewOptions | None = None,
        render_options: RenderOptions | None = None,
        *,
        styler: GraphvizStyler | None = None,
        cost: CostRecord | None = None,
        extras: TorchviewExtras | None = None,
        backward: BackwardPair | None = None,
    ) -> None:
        self.graph = graph
        #: ``draw_graph(backward=True)``: the joint graph and the backward pass alone
        self.backward = backward
        self.extras = extras if extras is not None else TorchviewExtras()
        #: what the cost probe measured while recording (``draw_graph(stats=...)``,
        #: ``tv.summary``), else None
        self.cost = cost
        self.options = options if options is not None else ViewOptions()
        self.render_options = render_options if render_options is not None else RenderOptions()
        self.styler = checked_styler(styler)
        self._cache: dict[str, Any] = {}
        self._cache_version = -1

    # -- views -------------------------------------------------------------------------
    def view(self, **changes: Any) -> ComputationGraph:
        """The same recording drawn with some options changed (``depth=1, roll=True``,
        ``graph_dir="LR"``); ``styler=`` swaps the styler, ``style=`` picks a named look
        (``"default"``, ``"paper"``, ``"dark"``)."""
        styler_given = "styler" in changes
        styler = changes.pop("styler", self.styler)
        if "style" in changes:
            styler = styler_of_style(changes.pop("style"), styler_given)
        unknown = sorted(set(changes) - OPTION_NAMES)
        if unknown:
            raise choices_error("view option", unknown[0], OPTION_NAMES)
        show = {k: v for k, v in changes.items() if k in VIEW_OPTION_NAMES}
        draw = {k: v for k, v in changes.items() if k in RENDER_OPTION_NAMES}
        opts, render_opts = self.options.replace(**show), self.render_options.replace(**draw)
        return ComputationGraph(
            self.graph, opts, render_opts, styler=styler, cost=self.cost, extras=self.extras, backward=self.backward
        )

    def backward_view(self, *, backward_only: bool = False, **changes: Any) -> ComputationGraph:
        """The forward with its backward pass beside it, or (``backward_only``) the backward
        pass alone in the module boxes; ``changes`` as for ``view``.  docs/backward.md."""
        if self.backward is None:
            raise InvalidInputError(
                "this recording has no backward pass: record it with draw_graph(model, ..., backward=True), "
                "or draw any tensor's autograd graph with tv.autograd_graph(output)"
            )
        g = self.view(**changes)
        g.graph = self.backward[bool(backward_only)]
        return g

    def annotate(self, *passes: AnnotationPass) -> ComputationGraph:
        """Run annotation passes on the recording (see ``tensorview.graph.annotations``);
        every drawing of it shows the new values from then on.  Returns ``self``."""
        annotate(self.graph, *passes)
        return self

    def _cached(self, key: str, make: Any) -> Any:
        version = self.graph.annotations.version
        if version != self._cache_version:  # annotations changed: labels are stale
            self._cache.clear()
            self._cache_version = version
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = make()
        return value

    def get_view(self) -> View:
        """The ``View`` (drawn nodes, edges, clusters) for the current options."""
        view: View = self._cached("view", lambda: build_view(self.graph, self.options))
        return view

    # -- Graphviz ----------------------------------------------------------------------
    @property
    def source(self) -> str:
        """DOT source of the current view (no ``dot`` program needed)."""
        text: str = self._cached(
            "source", lambda: DotRenderer(self.styler).render(self.get_view(), self.render_options)
        )
        return text

    @property
    def visual_graph(self) -> graphviz.Digraph:
        """The ``graphviz.Digraph`` of the current view (same text as ``source``); its
        ``render()`` writes into ``draw_graph``'s ``directory``, as ``filename`` (default
        ``<graph_name>.gv``), as torchview's does."""
        digraph: graphviz.Digraph = self._cached("digraph", self._digraph)
        return digraph

    def _digraph(self) -> graphviz.Digraph:
        digraph = DotRenderer(self.styler).digraph(self.get_view(), self.render_options, self.source)
        digraph.directory = self.extras.directory
        digraph.filename = self.extras.file_name(self.render_options.graph_name)
        return digraph

    def svg(self) -> str:
        """The drawing as SVG text (needs Graphviz ``dot``; else ``RenderError``)."""
        text: str = self._cached("svg", lambda: run_dot(self.source, "svg").decode("utf-8"))
        return text

    def save(self, path: str | os.PathLike[str], *, format: str | None = None) -> str:
        """Write the drawing; the format comes from the extension (or ``format``), one of
        the registered formats: svg, png, pdf (via ``dot``), gv/dot (DOT source), json
        (the full graph, ``to_json``), html (the interactive viewer, one self-contained page)."""
        path = _check_path(path)
        if format is not None and not isinstance(format, str):
            raise InvalidTypeError(
                f"save format must be a str, one of {list(extensions())!r}, got {type(format).__name__}: {shown(format)}"
            )
        fmt = format_for(format or os.path.splitext(path)[1].lstrip("."))
        data = self.produce(fmt)
        if isinstance(data, str):
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)
        else:
            with open(path, "wb") as fb:
                fb.write(data)
        return path

    def produce(self, fmt: Format) -> str | bytes:
        """The drawing in format ``fmt`` (SVG text comes from the cache)."""
        if fmt.name == "svg":
            return self.svg().encode("utf-8")
        return fmt.produce(self)

    def to_json(self) -> dict[str, Any]:
        """The FULL recorded graph (all depths, all tensors) in node-link form."""
        return self.graph.to_dict()

    # -- display -----------------------------------------------------------------------
    def interactive(self, *, height: int = 640, library: bool | None = None, engine: str = "dagre") -> Interactive:
        """The interactive viewer, displayed inline by Jupyter (JupyterLab, classic, VS Code):
        open and close modules and folded repeats, search, details.  ``height`` in pixels;
        Jupyter shows the picture (where no script runs: untrusted, GitHub, sanitised HTML)
        and the viewer, which hides it.  Each output carries the whole viewer (``library=False``:
        not its 0.07 MB library); ``engine``: its layout engine, ``"dagre"`` (small) or
        ``"elk"`` (the saved page's, better on big views, 0.68 MB per output; docs/viewer.md)."""
        return Interactive(self, height=height, library=library, engine=engine)

    def _repr_mimebundle_(
        self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None
    ) -> dict[str, str]:
        """The picture: every displayable picture format that can be made (SVG scaled to
        the output's width, PNG for untrusted notebooks and GitHub); where none can (no
        Graphviz), the first other displayable format (the viewer).  Always ``text/plain``."""
        wanted = set(include) if include is not None else None
        excluded = set(exclude or ())
        bundle: dict[str, str] = {}
        text = repr(self)
        for fmt in formats():
            if not fmt.display or fmt.mime in excluded or (wanted is not None and fmt.mime not in wanted):
                continue
            if bundle and not fmt.picture:
                break
            try:
                data = fmt.inline(self) if fmt.inline is not None else self.produce(fmt)
            except RenderError as e:
                note = f"\n(no picture: {e})"
                text += "" if note in text else note
                continue
            bundle[fmt.mime] = data.decode("utf-8") if isinstance(data, bytes) else data
            if not fmt.picture:
                break
        if (wanted is None or "text/plain" in wanted) and "text/plain" not in excluded:
            bundle["text/plain"] = text
        return bundle

    def __repr__(self) -> str:
        g = self.graph
        counts = {"module": 0, "function": 0, "tensor": 0}
        for n in g.nodes:
            counts[n.kind] += 1
        head = (
            f"ComputationGraph {shorten(self.render_options.graph_name)!r}: {counts['module']} module calls, "
            f"{counts['function']} ops, {counts['tensor']} tensors, {len(g.edges)} edges"
        )
        lines = [head]
        if g.error:
            lines.append(f"  error: {printable(g.error)}")
        lines.extend(f"  warning: {printable(w)}" for w in g.warnings)
        for listed, m in enumerate(g.modules()):
            if listed == REPR_MODULES:
                lines.append(f"  … {counts['module'] - listed} more module calls")
                break
            lines.append(_module_line(g, m))
        return "\n".join(lines)

    # -- the IR ------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """IR nodes in execution order (each with ``.name``, ``.kind``, ``.path``)."""
        return self.graph.nodes

    @property
    def inputs(self) -> list[TensorNode]:
        return [self.graph.tensor(i) for i in self.graph.inputs]

    @property
    def outputs(self) -> list[TensorNode]:
        return [self.graph.tensor(i) for i in self.graph.outputs]

    def table(self) -> str:
        """One row per IR node: name, kind, module path, op/class, shapes."""
        return self.graph.table()

    def summary(self, *, depth: int | None = 3, optimizer: str | int = "adam", state_dtype: Any = None) -> Summary:
        """The cost table of this recording (``tv.summary``'s, see docs/cost-model.md).
        Costs are measured while the forward runs: a graph recorded without them (no
        ``stats=``) cannot give one, and says so."""
        if self.cost is None:
            raise TensorviewError(
                "no costs were recorded with this graph (parameters, FLOPs and memory are measured while "
                "the forward runs): draw it with stats, e.g. draw_graph(model, ..., stats=('params', 'flops')), "
                "or call tv.summary(model, ...)"
            )
        from .cost.summary import Summary

        return Summary(self, self.cost, depth=depth, optimizer=optimizer, state_dtype=state_dtype)


def _check_path(path: Any) -> str:
    """A file path as ``str``: ``str``, ``bytes`` (decoded as the OS does) or ``os.PathLike``."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise InvalidTypeError(
            f"save path must be a str or os.PathLike such as 'model.svg', got {type(path).__name__}: {shown(path)}"
        )
    return os.fsdecode(path)


def _module_line(g: Graph, m: ModuleNode) -> str:
    title = one_line(f"{m.call_name}: {m.cls_name}" if m.path else m.cls_name)
    ins = fmt_shapes(g.shapes(g.input_tensors(m.id)))
    outs = fmt_shapes(g.shapes(g.output_tensors(m.id)))
    mark = " [failed]" if m.failed else ""
    return f"{'  ' * (m.depth + 1)}{title}  {ins} -> {outs}{mark}"


__all__ = ["OPTION_NAMES", "ComputationGraph"]

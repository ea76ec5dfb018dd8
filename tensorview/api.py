"""The public entry points: compose record -> graph -> transform -> render, nothing else."""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Sequence
from typing import Any, Literal

import graphviz
import torch
from torch import nn

from .cost.layers import STATS, ActivationBytes, check_stats
from .cost.probe import CostProbe
from .cost.summary import TRAIN_MODE_HINT, Summary, check_options
from .drawing import ComputationGraph
from .errors import InvalidInputError, InvalidTypeError, RecordingError, add_hint, choices_error, shown
from .graph import Graph, ViewOptions, ir_of
from .importers import import_program, is_program, program_inputs
from .recording import BaseRecorder, Probe, SourceProbe, interrupts
from .recording.fake import fake_placed, is_fake
from .recording.inputs import check_forward_kwargs, check_model, make_inputs, to_device
from .recording.modes import caller_modes_hidden
from .recording.placement import as_device, model_device, placed
from .render import DotRenderer, GraphvizStyler, RenderOptions, file_name, render_digraph, styler_for
from .render.formats import save_path
from .render.style import styler_class
from .transform import build_view

MODES = ("eval", "train", "same")


class Recorder(BaseRecorder[ComputationGraph]):
    """Record the first call of ``model`` made inside the ``with`` block; ``graph`` is a
    drawable ``ComputationGraph``.

    >>> import torch, tensorview as tv
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())
    >>> with tv.Recorder(model) as rec:
    ...     out = model(torch.randn(1, 4))
    >>> [m.path for m in rec.graph.graph.modules()]
    ['', '0', '1']

    ``device``, ``meta_replay``, ``probes`` and ``keep_parameters`` are those of
    ``recording.BaseRecorder`` (the model is left as it was; outputs are plain tensors);
    ``options``/``render_options`` are what ``graph`` shows and how it draws.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        device: Any = None,
        meta_replay: bool = True,
        probes: Sequence[Probe] = (),
        keep_parameters: bool = False,
        options: ViewOptions | None = None,
        render_options: RenderOptions | None = None,
    ) -> None:
        super().__init__(model, device=device, meta_replay=meta_replay, probes=probes, keep_parameters=keep_parameters)
        for name, value, cls in (("options", options, ViewOptions), ("render_options", render_options, RenderOptions)):
            if value is not None and not isinstance(value, cls):
                raise InvalidTypeError(f"{name} must be a {cls.__name__} or None, got {shown(value)}")
        self.options = options
        self.render_options = render_options

    def _result(self, graph: Graph) -> ComputationGraph:
        cost = next((p.record for p in self.probes if isinstance(p, CostProbe)), None)
        return ComputationGraph(graph, self.options, self.render_options, cost=cost)


def draw_graph(
    model: Any,
    input_size: Any = None,
    input_data: Any = None,
    *,
    dtypes: Any = None,
    device: Any = None,
    mode: str = "eval",
    depth: int = 3,
    expand_nested: bool = False,
    hide_inner_tensors: bool = True,
    hide_module_functions: bool = True,
    roll: bool = False,
    show_shapes: bool = True,
    show_params: bool = False,
    fold: bool | Literal["auto"] = "auto",
    open_folds: bool | int = False,
    graph_dir: str = "TB",
    graph_name: str = "model",
    save_graph: bool = False,
    filename: str | None = None,
    directory: str = ".",
    style: str | None = None,
    source: bool = True,
    stats: str | Sequence[str] = (),
    **forward_kwargs: Any,
) -> ComputationGraph:
    """Record one forward pass of ``model`` and return a drawable ``ComputationGraph``.

    Inputs: ``input_size`` (a shape or a list of shapes, with ``dtypes`` per input) or
    ``input_data`` (a tensor, a tuple/list of positional arguments, a dict of keyword
    arguments, or any nesting); ``forward_kwargs`` are passed to ``forward`` as well.
    Tensors given as ``input_size`` (torchview's ``draw_graph(model, x)``) are taken as
    ``input_data``.  ``dtypes`` applies to ``input_size`` only: with ``input_data`` it is
    an ``InvalidInputError`` (give tensors of the wanted dtype).  Tensors in
    ``input_data`` and ``forward_kwargs`` are moved to ``device`` (default: the model's).
    A keyword for ``forward`` that ``forward`` does not declare by name and that is close
    to an option name (``dept=2``) is an ``InvalidInputError`` ("did you mean depth?").
    ``device="meta"`` records models of any size without memory; the caller's model is
    never moved or modified (a meta copy is run instead).  ``device="fake"`` records with
    ``FakeTensorMode`` (no memory either) where the forward needs values meta lacks:
    ``nonzero`` and masks get symbolic sizes (``u0``), ``.item()`` a symbolic number, and
    Hugging Face mask helpers take their tracing path.  ``mode`` is ``"eval"``,
    ``"train"`` or ``"same"`` (leave the flags as they are); a mode other than the
    model's, or training mode (where BatchNorm updates its statistics), runs on a copy of
    the module tree that shares the parameters, so the caller's flags and buffers never
    change, also not while the call runs.
    The view options have torchview's meanings; change them later with ``graph.view(...)``.
    ``style`` picks a named look: ``"paper"`` (figures: serif, grayscale-safe, thin lines),
    ``"dark"`` (dark notebooks) or ``"default"``.  ``stats=("params", "flops")`` (see
    ``tensorview.cost.STATS``) records costs (grad enabled) and shows them on the nodes.
    ``source``: record where in your code each op and module call was made (the
    annotation layer ``"source"``, ``"file.py:123"``, shown by the HTML viewer; a few
    microseconds per op, see recording/source.py).

    A ``torch.export.ExportedProgram`` or a ``torch.fx.GraphModule`` is drawn from its
    graph, nothing runs: inputs are optional, checked against its input specs (see
    docs/recording.md).
    """
    program = is_program(model)
    stats = check_stats(stats, runs=not program)
    if not program:
        check_model(model, "draw_graph")
    styler = styler_for(style) if style is not None else None
    if forward_kwargs:
        check_forward_kwargs(model, forward_kwargs, _OPTION_NAMES)
    if mode not in MODES:
        raise choices_error("mode", mode, MODES)
    for flag, value in (("source", source), ("save_graph", save_graph)):
        if not isinstance(value, bool):
            raise InvalidTypeError(f"{flag} must be True or False, got {shown(value)}")
    options = ViewOptions(
        depth=depth,
        expand_nested=expand_nested,
        hide_inner_tensors=hide_inner_tensors,
        hide_module_functions=hide_module_functions,
        roll=roll,
        show_shapes=show_shapes,
        show_params=show_params,
        fold=fold,
        open_folds=open_folds,
    )
    render_options = RenderOptions(graph_dir=graph_dir, graph_name=graph_name)
    if program:
        ir = import_program(model, program_inputs(model, input_size, input_data, dtypes, mode, forward_kwargs))
        graph = ComputationGraph(ir, options, render_options)
    else:
        inputs = (input_size, input_data, dtypes, forward_kwargs)
        graph = _record(model, inputs, device, mode, stats, source, options=options, render_options=render_options)
    if styler is not None:
        graph = graph.view(styler=styler)
    if save_graph:
        graph.save(save_path(directory, filename, graph_name))
    return graph


def _record(
    model: nn.Module, inputs: Any, device: Any, mode: str, stats: Sequence[str], source: bool, **options: Any
) -> Any:
    """One forward of ``model`` (see draw_graph); with ``stats``, with the cost probe; with
    ``source``, with the source-location probe."""
    if mode not in MODES:
        raise choices_error("mode", mode, MODES)
    input_size, input_data, dtypes, forward_kwargs = inputs
    fake = is_fake(device)
    dev = None if fake else as_device(device)
    probes: list[Probe] = [CostProbe(stats)] if stats else []
    if source:
        probes.append(SourceProbe())
    # Ctrl-C waits while tensorview sets up and tears down, never in the forward (interrupts.py)
    with interrupts.deferred(interrupts.caller_frame()), contextlib.ExitStack() as stack:
        stack.enter_context(caller_modes_hidden())  # the caller's modes see the forward only
        stack.callback(torch.set_grad_enabled, torch.is_grad_enabled())  # also if torch's own guard is cut short
        target = dev if dev is not None else model_device(model)
        args, kwargs = make_inputs(input_size, input_data, dtypes, target)
        kwargs.update({k: to_device(v, target, f"forward keyword argument {k!r}") for k, v in forward_kwargs.items()})
        if fake:  # FakeTensorMode: sizes that depend on values become symbols (recording/fake.py)
            runnable, to_fake = stack.enter_context(fake_placed(model, mode))
            args, kwargs = to_fake((args, kwargs))
        else:
            runnable = placed(model, dev, mode)  # a copy where the mode or buffers would change
        # a copy shares the caller's parameters, but what forward sets on self stays on the
        # copy: parameters it writes are put back too (recording/keep.py)
        options["keep_parameters"] = runnable is not model
        with torch.set_grad_enabled(bool(stats)), Recorder(runnable, device=dev, probes=probes, **options) as rec:
            runnable(*args, **kwargs)
    return rec.graph.annotate(ActivationBytes()) if "activation_bytes" in stats else rec.graph


def _option_names(fn: Any) -> tuple[str, ...]:  # a forward keyword close to one is a misspelling
    return tuple(n for n, p in inspect.signature(fn).parameters.items() if p.kind is not p.VAR_KEYWORD and n != "model")


_OPTION_NAMES = _option_names(draw_graph)


def summary(
    model: nn.Module,
    input_size: Any = None,
    input_data: Any = None,
    *,
    dtypes: Any = None,
    device: Any = "meta",
    mode: str = "train",
    depth: int | None = 3,
    optimizer: str | int = "adam",
    state_dtype: Any = None,
    **forward_kwargs: Any,
) -> Summary:
    """Parameters, FLOPs and memory of ``model`` per module call and in total (``print(s)``):
    one forward with grad enabled, inputs as for ``draw_graph``, on a copy where anything
    could change; ``optimizer``/``state_dtype``: the training memory.  docs/cost-model.md."""
    check_model(model, "summary")
    check_forward_kwargs(model, forward_kwargs, _option_names(summary))
    check_options(depth, optimizer, state_dtype)
    try:
        graph = _record(model, (input_size, input_data, dtypes, forward_kwargs), device, mode, STATS, False)
    except RecordingError as e:
        if mode == "train" and not model.training and not e.hint:  # failed in a mode not asked for
            add_hint(e, TRAIN_MODE_HINT)
        raise
    return Summary(graph, graph.cost, depth=depth, optimizer=optimizer, state_dtype=state_dtype)


def record(
    model: nn.Module, name: str = "model", input_shapes: Any = None, input_data: Any = None, **options: Any
) -> ComputationGraph:
    """Record ``model`` without rendering (torchrecorder's ``record``); returns the graph.

    ``input_shapes`` is a shape or a list of shapes; ``input_data`` real inputs.
    Extra keyword arguments are view options (``depth``, ``show_params``...)."""
    options.setdefault("depth", 256)
    return draw_graph(model, input_shapes, input_data, graph_name=name, **options)


def make_dot(
    graph: ComputationGraph | Graph,
    render_depth: int = 256,
    styler_cls: type[GraphvizStyler] | None = None,
    **styler_args: Any,
) -> graphviz.Digraph:
    """A ``graphviz.Digraph`` of a recorded graph (a ``ComputationGraph`` or an IR
    ``Graph``), opened down to ``render_depth`` (the view depth) with a dashed box around
    each opened module, styled by ``styler_cls(**styler_args)`` (torchrecorder)."""
    ir = ir_of(graph, "make_dot")
    styler_cls = styler_class(styler_cls)
    base = graph.options if isinstance(graph, ComputationGraph) else ViewOptions()
    render_options = graph.render_options if isinstance(graph, ComputationGraph) else RenderOptions()
    options = base.replace(depth=render_depth, expand_nested=True)
    styler = (styler_cls or GraphvizStyler)(**styler_args)
    return DotRenderer(styler).digraph(build_view(ir, options), render_options)


def render_network(
    model: nn.Module,
    name: str,
    input_shapes: Any,
    directory: str,
    filename: str | None = None,
    fmt: str = "svg",
    input_data: Any = None,
    render_depth: int = 1,
    **styler_args: Any,
) -> str:
    """One call from model to image file (torchrecorder's ``render_network``); returns the path."""
    if not isinstance(fmt, str) or not fmt:
        raise InvalidInputError(f"bad fmt {fmt!r}: expected a format name such as 'svg', 'png', 'pdf'")
    graph = record(model, name, input_shapes if input_data is None else None, input_data)
    dot = make_dot(graph, render_depth=render_depth, **styler_args)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, (filename or file_name(name)) + "." + fmt)
    render_digraph(dot, path, fmt)
    return path

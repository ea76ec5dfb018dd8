"""The public entry points: compose record -> graph -> transform -> render, nothing else."""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from .compat.graph_api import TorchviewExtras
from .compat.options import check_flag, check_mode, input_slots, save_files
from .drawing import ComputationGraph
from .errors import InvalidInputError, InvalidTypeError, shown
from .graph import Graph, ViewOptions
from .importers import import_program, is_program, program_inputs
from .probing import annotate_stats, attributes_probe, backward_probe, check_stats
from .recording import BaseRecorder, Probe, SourceProbe, interrupts
from .recording.fake import fake_placed, is_fake
from .recording.inputs import check_forward_kwargs, check_model, dtypes_hint, make_inputs, to_device
from .recording.modes import caller_modes_hidden
from .recording.placement import as_device, model_device, placed
from .render import RenderOptions, styler_for

if TYPE_CHECKING:  # the cost model is imported by what uses it: stats=, summary (docs/architecture.md)
    from .cost.summary import Summary


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
    ``options``/``render_options`` are what ``graph`` shows and how it draws; ``backward``:
    also note which op made each autograd node, for ``with_backward(out)`` (docs/backward.md).
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
        backward: bool = False,
    ) -> None:
        probes = [*probes, backward_probe()] if check_flag("backward", backward) else probes
        super().__init__(model, device=device, meta_replay=meta_replay, probes=probes, keep_parameters=keep_parameters)
        for name, value, cls in (("options", options, ViewOptions), ("render_options", render_options, RenderOptions)):
            if value is not None and not isinstance(value, cls):
                raise InvalidTypeError(f"{name} must be a {cls.__name__} or None, got {shown(value)}")
        self.options = options
        self.render_options = render_options

    def _result(self, graph: Graph) -> ComputationGraph:
        probe = sys.modules.get("tensorview.cost.probe")  # none of its probes exist before it is imported
        cost = next((p.record for p in self.probes if isinstance(p, probe.CostProbe)), None) if probe else None
        return ComputationGraph(graph, self.options, self.render_options, cost=cost)

    def with_backward(self, output: Any, *, run_backward: bool = False) -> ComputationGraph:
        """The recording joined with the backward pass of ``output`` (what the recorded call
        returned, with grad enabled), as ``draw_graph(..., backward=True)`` draws it."""
        from .autograd import joined
        from .backward import BackwardProbe

        probe = next((p for p in self.probes if isinstance(p, BackwardProbe)), None)
        if probe is None:
            raise InvalidInputError("with_backward needs a recording made with tv.Recorder(model, backward=True)")
        return joined(self.graph, probe, [output], check_flag("run_backward", run_backward))


def draw_graph(
    model: Any,
    input_data: Any = None,
    input_size: Any = None,
    graph_name: str = "model",
    depth: int | float = 3,
    device: Any = None,
    dtypes: Any = None,
    mode: str | None = None,
    strict: bool = True,
    expand_nested: bool = False,
    graph_dir: str | None = None,
    hide_module_functions: bool = True,
    hide_inner_tensors: bool = True,
    roll: bool = False,
    show_shapes: bool = True,
    save_graph: bool = False,
    filename: str | None = None,
    directory: str = ".",
    collect_attributes: bool = False,
    *,
    show_params: bool = False,
    fold: bool | Literal["auto"] = "auto",
    open_folds: bool | int = False,
    style: str | None = None,
    source: bool = True,
    stats: str | Sequence[str] = (),
    backward: bool = False,
    run_backward: bool = False,
    **forward_kwargs: Any,
) -> ComputationGraph:
    """Record one forward pass of ``model`` and return a drawable ``ComputationGraph``.

    The arguments up to ``collect_attributes`` are torchview's, in its order and with its
    meanings (docs/migrating.md; ``compat/options.py``: a second argument made only of
    numbers is ``input_size``).  Inputs: ``input_data`` (any ``Mapping`` gives keyword
    arguments, a list/tuple positional ones, else one argument: docs/recording.md#inputs) or
    ``input_size`` (shapes, with ``dtypes`` per input, default ``torch.get_default_dtype()``;
    ``dtypes`` with ``input_data`` is an ``InvalidInputError``); ``forward_kwargs`` go to ``forward`` too
    (never an option of this function; one close to an option name, ``dept=2``, is an
    ``InvalidInputError`` unless ``forward`` declares it).  Tensors are moved to ``device``
    (default: the model's).  ``device="meta"`` records models of any size without memory
    (a meta copy runs; the caller's model is never moved or modified); ``device="fake"``
    records with ``FakeTensorMode`` (no memory either) where the forward needs values meta
    lacks: ``nonzero`` and masks get symbolic sizes (``u0``), ``.item()`` a symbolic
    number, and Hugging Face mask helpers take their tracing path.  ``mode`` is ``"eval"`` (``None``),
    ``"train"`` or ``"same"``; a mode other than the model's runs on a copy of the module
    tree sharing the parameters, so the caller's flags and buffers never change.
    ``strict``: tensorview always draws one edge per pair (``×2`` on it), torchview's
    ``strict=True`` picture; ``collect_attributes``: node objects get ``attributes``.
    ``save_graph`` writes ``<directory>/<filename>`` (DOT, default ``<graph_name>.gv``) and
    ``<filename>.png``.  Beyond torchview: ``show_params``, ``fold``/``open_folds``
    (repeated blocks as one ``×N`` box), ``style`` (a named look: ``"paper"`` for figures,
    serif, grayscale-safe, thin lines; ``"dark"`` for dark notebooks; ``"default"``),
    ``stats=("params", "flops")`` (``tensorview.cost.STATS``: costs recorded with grad
    enabled and shown on the nodes; ``"memory"``: tv.memory's per-call numbers) and ``source`` (record where in your code each op and
    module call was made: the annotation layer ``"source"``, ``"file.py:123"``, shown by
    the HTML viewer; a few microseconds per op, recording/source.py), ``backward``
    (record with grad enabled and draw each op's autograd nodes beside it, gradients in
    reverse: docs/backward.md; ``graph.backward_view(backward_only=True)``; ``run_backward``:
    run it once on the recording's outputs, no ``.grad`` written, timing each node).  Change the view
    later with ``graph.view(...)``.

    A ``torch.export.ExportedProgram`` or a ``torch.fx.GraphModule`` is drawn from its
    graph, nothing runs: inputs are optional, checked against its input specs (see
    docs/recording.md); a GraphModule calling leaf modules is recorded when given inputs.
    """
    input_size, input_data = input_slots(input_data, input_size)
    mode, graph_dir = check_mode(mode), "TB" if graph_dir is None else graph_dir
    check_flag("strict", strict), check_flag("collect_attributes", collect_attributes)
    extras = TorchviewExtras(directory, filename)  # checked before the forward runs
    program = is_program(model, input_size is not None or input_data is not None)
    stats = check_stats(stats, program)
    if not program:
        check_model(model, "draw_graph")
    styler = styler_for(style) if style is not None else None
    if forward_kwargs:
        check_forward_kwargs(model, forward_kwargs, _OPTION_NAMES)
    for flag, value in (("source", source), ("save_graph", save_graph)):
        if not isinstance(value, bool):
            raise InvalidTypeError(f"{flag} must be True or False, got {shown(value)}")
    options = ViewOptions(
        depth=depth,  # type: ignore[arg-type]  # a float is rounded down, inf kept as DEPTH_ALL
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
    attributes = attributes_probe() if collect_attributes else None
    if program:
        ir = import_program(model, program_inputs(model, input_size, input_data, dtypes, mode, forward_kwargs))
        graph = ComputationGraph(ir, options, render_options)
    else:
        inputs = (input_size, input_data, dtypes, forward_kwargs)
        if check_flag("run_backward", run_backward) and not check_flag("backward", backward):
            raise InvalidInputError("run_backward=True runs the backward drawn by backward=True: pass both")
        check_flag("backward", backward)
        probes: list[Probe] = [attributes] if attributes is not None else []
        returned: list[Any] = []
        if backward:
            probes.append(backward_probe())
        graph = _record(
            model, inputs, device, mode, stats, source, probes, returned, options=options, render_options=render_options
        )
        if backward:
            from .autograd import joined

            graph = joined(graph, probes[-1], returned, run_backward)
    graph.extras = replace(extras, attributes=attributes.found if attributes is not None else None)
    if styler is not None:
        graph = graph.view(styler=styler)
    if save_graph:
        save_files(graph.source, graph.extras.directory, graph.extras.file_name(graph_name))
    return graph


def _record(
    model: nn.Module,
    inputs: Any,
    device: Any,
    mode: str,
    stats: Sequence[str],
    source: bool,
    more_probes: Sequence[Probe] = (),
    returned: list[Any] | None = None,
    **options: Any,
) -> Any:
    """One forward of ``model`` (see draw_graph); with ``stats``, with the cost probe; with
    ``source``, with the source-location probe; and with ``more_probes``; what forward
    returned is appended to ``returned`` (with a ``BackwardProbe``: grad enabled)."""
    mode = check_mode(mode)
    input_size, input_data, dtypes, forward_kwargs = inputs
    fake = is_fake(device)
    dev = None if fake else as_device(device)
    probes: list[Probe] = []
    if stats:
        from .cost.probe import CostProbe

        probes.append(CostProbe(stats))
    probes.extend(more_probes)
    if source:
        probes.append(SourceProbe())
    # Ctrl-C waits while tensorview sets up and tears down, never in the forward (interrupts.py)
    with interrupts.deferred(interrupts.caller_frame()), contextlib.ExitStack() as stack:
        stack.enter_context(dtypes_hint(input_size, input_data, dtypes))  # nn.Embedding given floats
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
        backward = sys.modules.get("tensorview.backward.probe")  # none of its probes exist before it is imported
        grad = bool(stats) or (backward is not None and any(isinstance(p, backward.BackwardProbe) for p in probes))
        with torch.set_grad_enabled(grad), Recorder(runnable, device=dev, probes=probes, **options) as rec:
            result = runnable(*args, **kwargs)
        if returned is not None:
            returned.append(result)
    return annotate_stats(rec.graph, stats, model, inputs) if stats else rec.graph


def _option_names(fn: Any) -> tuple[str, ...]:  # a forward keyword close to one is a misspelling
    return tuple(n for n, p in inspect.signature(fn).parameters.items() if p.kind is not p.VAR_KEYWORD and n != "model")


_OPTION_NAMES = _option_names(draw_graph)


def summary(
    model: nn.Module,
    input_size: Any = None,
    input_data: Any = None,
    batch_dim: int | None = None,
    cache_forward_pass: bool | None = None,
    col_names: Sequence[str] | None = None,
    col_width: int | None = None,
    depth: int | None = 3,
    device: Any = "auto",
    dtypes: Any = None,
    mode: str | None = None,
    row_settings: Sequence[str] | None = None,
    verbose: int | None = None,
    *,
    optimizer: str | int = "adam",
    state_dtype: Any = None,
    fold: bool = True,
    **forward_kwargs: Any,
) -> Summary:
    """Parameters, FLOPs and memory of ``model`` per module call and in total: one forward
    (grad on, inputs as for ``draw_graph``, on a copy), or without inputs the parameter
    table; torchinfo's arguments and meanings.  ``mode``: ``"train"`` by default, ``"eval"``
    where only the training-mode forward fails (the table says so).  docs/cost-model.md,
    migrating-torchinfo.md."""
    check_model(model, "summary")
    check_forward_kwargs(model, forward_kwargs, _option_names(summary))
    inputs = (input_size, input_data, batch_dim, dtypes, forward_kwargs)
    table = (col_names, col_width, row_settings, verbose, fold)
    from .cost.run import summarize

    return summarize(_record, model, inputs, table, cache_forward_pass, depth, device, mode, optimizer, state_dtype)

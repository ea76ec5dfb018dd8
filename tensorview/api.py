"""The public entry points: compose record -> graph -> transform -> render, nothing else."""

from __future__ import annotations

import inspect
import os
from typing import Any, Literal

import torch
from torch import nn

from .errors import InvalidInputError, choices_error
from .recording import Recorder
from .recording.inputs import (
    as_device, check_forward_kwargs, check_model, make_inputs, model_device, placed, to_device, training_mode,
)

MODES = ("eval", "train", "same")


def draw_graph(
    model: nn.Module,
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
    graph_dir: str = "TB",
    graph_name: str = "model",
    save_graph: bool = False,
    filename: str | None = None,
    directory: str = ".",
    **forward_kwargs: Any,
) -> Any:
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
    never moved or modified (a meta copy is run instead).  ``mode`` is ``"eval"``,
    ``"train"`` or ``"same"`` (leave the flags as they are); flags are restored afterwards.
    The view options have torchview's meanings; change them later with ``graph.view(...)``.
    """
    from .drawing import ComputationGraph
    from .transform import ViewOptions

    check_model(model, "draw_graph")
    if forward_kwargs:
        check_forward_kwargs(model, forward_kwargs, _OPTION_NAMES)
    if mode not in MODES:
        raise choices_error("mode", mode, MODES)
    options = ViewOptions(
        depth=depth, expand_nested=expand_nested, hide_inner_tensors=hide_inner_tensors,
        hide_module_functions=hide_module_functions, roll=roll, show_shapes=show_shapes,
        show_params=show_params, fold=fold, graph_dir=graph_dir, graph_name=graph_name,
    )
    dev = as_device(device)
    target = dev if dev is not None else model_device(model)
    args, kwargs = make_inputs(input_size, input_data, dtypes, target)
    kwargs.update({k: to_device(v, target, f"forward keyword argument {k!r}") for k, v in forward_kwargs.items()})
    with placed(model, dev) as runnable, training_mode(runnable, mode), torch.no_grad():
        with Recorder(runnable, device=dev, graph_options=options) as rec:
            runnable(*args, **kwargs)
    graph: ComputationGraph = rec.graph
    if save_graph:
        graph.save(_save_path(directory, filename, graph_name))
    return graph


#: draw_graph's own parameter names (a forward keyword close to one is a misspelling)
_OPTION_NAMES = tuple(
    n for n, p in inspect.signature(draw_graph).parameters.items() if p.kind is not p.VAR_KEYWORD and n != "model"
)


def _save_path(directory: str, filename: str | None, graph_name: str) -> str:
    directory = os.fsdecode(directory)
    name = os.fsdecode(filename) if filename else graph_name
    if not os.path.splitext(name)[1]:
        name += ".png"  # torchview saves a PNG by default
    return os.path.join(directory, name)


def record(model: nn.Module, name: str = "model", input_shapes: Any = None, input_data: Any = None, **options: Any) -> Any:
    """Record ``model`` without rendering (torchrecorder's ``record``); returns the graph.

    ``input_shapes`` is a shape or a list of shapes; ``input_data`` real inputs.
    Extra keyword arguments are view options (``depth``, ``show_params``...)."""
    options.setdefault("depth", 256)
    return draw_graph(model, input_shapes, input_data, graph_name=name, **options)


def make_dot(graph: Any, render_depth: int = 256, styler_cls: Any = None, **styler_args: Any) -> Any:
    """A ``graphviz.Digraph`` of a recorded graph down to ``render_depth`` (torchrecorder)."""
    from .render import make_dot as _make_dot

    return _make_dot(graph, render_depth=render_depth, styler_cls=styler_cls, **styler_args)


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
    path = os.path.join(directory, (filename or name) + "." + fmt)
    from .render import render_digraph

    render_digraph(dot, path, fmt)
    return path

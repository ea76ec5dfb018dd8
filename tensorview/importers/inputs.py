"""Inputs given for a traced program: checked against its input specs (the sizes they
bind fill in its symbolic sizes), or, for an fx graph without shape metadata, propagated
through it on fake tensors with ``ShapeProp`` (nothing runs, no memory is used, the
user's graph and its metadata are left as they were)."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import GraphModule, Interpreter, Node
from torch.fx.passes.shape_prop import ShapeProp
from torch.utils import _pytree as pytree

from ..errors import InvalidInputError, RecordingError
from ..recording.inputs import make_inputs, to_device
from .meta import Dims


def check_inputs(
    placeholders: list[Node], args: tuple[Any, ...], kwargs: dict[str, Any], in_spec: Any, ranges: Any, dims: Dims
) -> None:
    """``args``/``kwargs`` must match the program's user inputs (structure, ranks, sizes
    fixed at export, ranges of dynamic sizes, dtypes); their sizes bind ``dims``."""
    from torch._export.utils import _check_input_constraints_for_graph
    from torch.export._unlift import _check_inputs_match

    try:
        if in_spec is not None:
            flat = _check_inputs_match(args, kwargs, in_spec)
        else:
            flat = pytree.tree_flatten_with_path(ordered_args(placeholders, args, kwargs))[0]
        _check_input_constraints_for_graph(placeholders, flat, ranges or {})
    except (RuntimeError, ValueError, TypeError) as e:
        raise InvalidInputError(f"the given inputs do not match the program's inputs: {e}") from e
    for (_, arg), node in zip(flat, placeholders):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and isinstance(arg, torch.Tensor):
            if val.dtype != arg.dtype:
                raise InvalidInputError(
                    f"the given input {node.name!r} has dtype {arg.dtype}, the program takes {val.dtype}"
                )
            for d, size in zip(val.shape, arg.shape):
                dims.bind(d, size)
        elif isinstance(val, torch.SymInt) and isinstance(arg, int):
            dims.bind(val, arg)


def ordered_args(placeholders: list[Node], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """One value per placeholder: positional arguments first, then keywords by name."""
    if len(args) > len(placeholders):
        raise InvalidInputError(f"got {len(args)} positional inputs, the graph takes {len(placeholders)}")
    names = [str(p.target) for p in placeholders]
    unknown = [k for k in kwargs if k not in names[len(args) :]]
    if unknown:
        raise InvalidInputError(f"unknown input name {unknown[0]!r}: the graph's inputs are {names}")
    out = list(args)
    for p in placeholders[len(args) :]:
        if str(p.target) in kwargs:
            out.append(kwargs[str(p.target)])
        elif p.args:  # a default value
            out.append(p.args[0])
        else:
            raise InvalidInputError(f"no value given for the graph's input {str(p.target)!r} (inputs: {names})")
    return tuple(out)


class _Propagate(ShapeProp):
    """``ShapeProp`` on a fake copy of the module, keeping each node's result here
    instead of writing it into the user's graph."""

    def __init__(self, gm: GraphModule, fake_mode: Any) -> None:
        super().__init__(gm, fake_mode)
        self.results: dict[Node, Any] = {}

    def run_node(self, n: Node) -> Any:
        from torch._dispatch.python import enable_python_dispatcher

        self.module = self.fake_module
        try:
            with self.fake_mode, enable_python_dispatcher():
                result = Interpreter.run_node(self, n)
        except Exception as e:
            raise RecordingError(
                f"shape propagation (ShapeProp on fake tensors) failed at node {n.name!r} "
                f"({(n.format_node() or '')[:200]}): {type(e).__name__}: {e}"
            ) from e
        finally:
            self.module = self.real_module
        self.results[n] = result
        return result


def propagate(gm: GraphModule, args: tuple[Any, ...], kwargs: dict[str, Any], device: torch.device) -> dict[Node, Any]:
    """Each node's result for these inputs, computed on fake tensors on ``device``."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = ordered_args(placeholders, args, kwargs)
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())

    def fake(t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        with mode:
            return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=device)

    fakes = [pytree.tree_map(fake, v) for v in values]
    prop = _Propagate(gm, mode)
    prop.run(*fakes)
    return prop.results


def require_inputs(missing: list[Node], leaves: bool = False) -> InvalidInputError:
    """``leaves``: the graph calls modules, so given inputs it is recorded (it runs)."""
    names = ", ".join(repr(n.name) for n in missing[:3])
    then = (
        "it is then recorded like any module, with the ops inside the modules fx did not trace into"
        if leaves
        else "and its shapes are propagated on fake tensors (nothing runs)"
    )
    return InvalidInputError(
        f"this GraphModule has no shape metadata (no meta['val'] or meta['tensor_meta'] on {names}"
        f"{'...' if len(missing) > 3 else ''}; a torch.fx.symbolic_trace result has none): pass input_size "
        f"or input_data: {then}"
    )


__all__ = ["check_inputs", "propagate", "require_inputs"]


def program_inputs(
    program: Any, input_size: Any, input_data: Any, dtypes: Any, mode: str, forward_kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The inputs given for a traced program, on meta (only their shapes are used), or
    ``None``.  Its graph was fixed when it was traced: ``mode="train"`` cannot apply."""
    what = type(program).__name__
    if mode == "train":
        raise InvalidInputError(
            f"mode='train' cannot apply to a {what}: its graph was fixed when it was traced "
            "(export or trace the model in train mode instead); use mode='eval' or 'same'"
        )
    if input_size is None and input_data is None and not forward_kwargs:
        return None
    meta = torch.device("meta")
    args, kwargs = (
        ((), {}) if input_size is None and input_data is None else make_inputs(input_size, input_data, dtypes, meta)
    )
    kwargs.update({k: to_device(v, meta, f"forward keyword argument {k!r}") for k, v in forward_kwargs.items()})
    return args, kwargs

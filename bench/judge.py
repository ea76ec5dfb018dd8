"""How the sweeps (sweep.py: transformers; sweep_vision.py: torchvision and timm) judge one
model's recordings by independent means, whatever built the model.

``judge(model, x, devices)`` records ``model(**x)`` with ``draw_graph`` on each device (the
model in training mode, recorded in ``eval``: a copy) and returns the problems found:

* the ops recorded on each device are the same (names and counts, then order and module
  paths);
* the graph's output shapes are the plain forward's;
* every parameter that gets a gradient in a plain forward and backward is drawn (or the
  graph warns);
* ``lint()`` passes, and the model is unchanged afterwards (parameter objects and values,
  buffers, training flags, hooks).
"""

from __future__ import annotations

import collections
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch import nn

import tensorview as tv


def snapshot(m: nn.Module) -> tuple[Any, ...]:
    return (
        [(n, p, p.detach().clone()) for n, p in m.named_parameters()],
        [(n, b.detach().clone()) for n, b in m.named_buffers()],
        [x.training for x in m.modules()],
        [(dict(x._forward_hooks), dict(x._forward_pre_hooks)) for x in m.modules()],
    )


def changed(a: tuple[Any, ...], b: tuple[Any, ...]) -> str | None:
    if [(n, id(p)) for n, p, _ in a[0]] != [(n, id(p)) for n, p, _ in b[0]]:
        return "parameter objects"
    if not all(torch.equal(x, y) for (_, _, x), (_, _, y) in zip(a[0], b[0])):
        return "parameter values"
    if [n for n, _ in a[1]] != [n for n, _ in b[1]] or not all(torch.equal(x, y) for (_, x), (_, y) in zip(a[1], b[1])):
        return "buffers"
    if a[2] != b[2]:
        return "training flags"
    return "hooks" if a[3] != b[3] else None


def shapes(value: Any) -> list[tuple[int, ...]]:
    return sorted(tuple(t.shape) for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor))


#: how a problem begins where the model's own plain forward fails on that device as well
PLAIN_FAILS = "meta (the plain forward fails there too): "


def _plain_on_meta(model: nn.Module, x: dict[str, Any]) -> str | None:
    """Why the plain forward of a meta copy of ``model`` fails, or None when it runs."""
    import copy

    try:
        runner = copy.deepcopy(model).to("meta").eval()
        inputs = pytree.tree_map(lambda v: v.to("meta") if isinstance(v, torch.Tensor) else v, x)
        with torch.no_grad():
            runner(**inputs)
    except Exception as e:  # noqa: BLE001 - the reason is the answer
        return f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    return None


def used_parameters(
    model: nn.Module, x: dict[str, Any], run_on: str | None = None, calls: list[str] | None = None
) -> tuple[Any, set[str]]:
    """The plain forward's output (eval mode) and the parameters a backward through its
    floating outputs gives a gradient; ``run_on``: a device to run a copy on; ``calls``
    gets the paths of the submodule calls, in order (a global forward pre-hook's view)."""
    import copy

    calls = [] if calls is None else calls
    runner = model if run_on is None else copy.deepcopy(model).to(run_on)
    inputs = x if run_on is None else pytree.tree_map(lambda v: v.to(run_on) if isinstance(v, torch.Tensor) else v, x)
    runner.eval()
    names = {id(m): name for name, m in runner.named_modules()}
    calls.clear()

    def pre(m: nn.Module, args: Any) -> None:  # (modules made on the fly have no path: not listed)
        if id(m) in names and m is not runner:
            calls.append(names[id(m)])

    # cuDNN's RNN has no backward in eval mode: off for models with one (elsewhere on, as
    # where the recording runs: other conv kernels can move detections across a threshold)
    cudnn = not any(isinstance(m, nn.RNNBase) for m in runner.modules())
    hook = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    try:
        with torch.backends.cudnn.flags(enabled=cudnn):
            out = runner(**inputs)
    finally:
        hook.remove()
    with torch.backends.cudnn.flags(enabled=cudnn):
        leaves = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
        if leaves and any(t.requires_grad for t in leaves):
            sum(t.float().sum() for t in leaves if t.requires_grad).backward()
    used = {n for n, p in runner.named_parameters() if p.grad is not None}
    runner.zero_grad(set_to_none=True)
    return out, used


def judge(
    model: nn.Module, x: dict[str, Any], devices: tuple[str, ...] = ("cpu", "meta"), run_on: str | None = None
) -> list[str]:
    """The problems of ``model``'s recordings on ``devices`` (``"cpu"``: where the model is)."""
    calls: list[str] = []
    out, used = used_parameters(model, x, run_on, calls)
    model.train()
    before = snapshot(model)
    problems: list[str] = []
    graphs = {}
    for device in devices:
        try:
            graphs[device] = tv.draw_graph(model, input_data=dict(x), device=None if device == "cpu" else device).graph
        except Exception as e:  # noqa: BLE001 - reported
            why = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            plain = _plain_on_meta(model, x) if device == "meta" else None
            problems.append(f"{PLAIN_FAILS}{plain}; recording: {why}" if plain else f"{device}: {why}")
    if (what := changed(before, snapshot(model))) is not None:
        problems.append(f"model changed: {what}")
    recorded = {d: [(f.op, f.path) for f in g.functions()] for d, g in graphs.items()}
    first, *others = list(recorded) or [None]
    for other in others:
        a, b = recorded[first], recorded[other]
        ca, cb = collections.Counter(op for op, _ in a), collections.Counter(op for op, _ in b)
        if ca != cb:
            problems.append(f"ops {first}!={other}: {first} only {dict(ca - cb)}, {other} only {dict(cb - ca)}")
        elif a != b:
            problems.append(f"ops {first}!={other} in order or module paths")
    paths = {name for name, _ in model.named_modules()}
    for device, g in graphs.items():  # the module calls, as a global hook sees them
        drawn_calls = [m.path for m in g.modules() if not m.method and m.path and m.path in paths]
        if drawn_calls != calls:
            at = next(
                (i for i, (a, b) in enumerate(zip(drawn_calls, calls)) if a != b), min(len(calls), len(drawn_calls))
            )
            problems.append(
                f"{device}: module calls differ from the plain forward's at call {at}: "
                f"{drawn_calls[at : at + 2]} drawn, {calls[at : at + 2]} run ({len(drawn_calls)} vs {len(calls)})"
            )
    names = {n for n, _ in model.named_parameters()} | {n for n, _ in model.named_buffers()}
    for device, g in graphs.items():
        g.lint()
        drawn_shapes = sorted(tuple(s) for s in g.shapes(g.outputs))
        if drawn_shapes != shapes(out):
            problems.append(f"{device}: output shapes {drawn_shapes}, plain {shapes(out)}")
        drawn = {t.source_name for t in g.tensors() if t.is_param}
        if (missing := sorted(used - drawn)) and not g.warnings:
            problems.append(f"{device}: {len(missing)} parameters used but not drawn ({missing[0]}...)")
        if strays := sorted(n for n in drawn if n and n not in names):
            problems.append(f"{device}: parameters drawn that the model lacks ({strays[0]}...)")
        if g.warnings:
            problems.append(f"{device}: warnings {g.warnings[:2]}")
    return problems


def outputs(model: nn.Module, x: dict[str, Any], real: str | None = None) -> list[str]:
    """What a user gets beyond the graph: the default and depth-1 drawings (DOT), the
    viewer's page, the JSON, and tv.summary, whose parameter count must be the model's."""
    import json

    from tensorview.render.formats import format_for

    problems: list[str] = []
    try:
        g = tv.draw_graph(model, input_data=dict(x), device=real)
        for view in (g, g.view(depth=1)):
            if not view.source.startswith("digraph"):
                problems.append("render: the DOT text is not a digraph")
        page = g.produce(format_for("html"))
        if len(page) < 1000:
            problems.append(f"render: a {len(page)}-byte viewer page")
        json.dumps(g.to_json())
    except Exception as e:  # noqa: BLE001 - reported
        problems.append(f"render: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    try:  # FLOPs in eval mode against torch's own counter on a plain forward (independent means)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.utils.flop_counter import FlopCounterMode

        # attention as matmuls, which torch counts (its CPU fused kernel has no formula; tv.summary
        # gives it the flash kernel's, the same count: docs/cost-model.md); grad on, as tv.summary
        # records (no_grad takes fused fast paths, nn.TransformerEncoderLayer's, with no formula);
        # the model itself in eval mode (a deep copy fails where a forward left non-leaf tensors)
        training = [m.training for m in model.modules()]
        try:
            model.eval()
            with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
                model(**x)
        finally:
            for m, flag in zip(model.modules(), training):
                m.training = flag
        counted = tv.summary(model, input_data=dict(x), mode="eval", verbose=0).total_flops
        # (the CPU's fused LSTM/GRU layer has no formula in torch: tv.summary counts its products)
        rnn = any(isinstance(m, nn.RNNBase) for m in model.modules())
        if counted != counter.get_total_flops() and not rnn:
            problems.append(
                f"summary: {counted:,} FLOPs in eval mode, torch's FlopCounterMode {counter.get_total_flops():,}"
            )
    except Exception as e:  # noqa: BLE001 - reported
        problems.append(f"flops: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    try:  # with its defaults (device="auto": meta, else the model's own device), as a user calls it
        s = tv.summary(model, input_data=dict(x), verbose=0)
        params = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
        if s.total_params != params:
            problems.append(f"summary: {s.total_params:,} parameters, the model has {params:,}")
        if not str(s):
            problems.append("summary: no table")
    except Exception as e:  # noqa: BLE001 - reported
        problems.append(f"summary: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    return problems

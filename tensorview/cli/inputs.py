"""The forward call's inputs: what ``--input-size`` gives, else the target family's
defaults (token ids for text models, pixel values for vision), as tensors on the device."""

from __future__ import annotations

from typing import Any

import torch

from .values import InputSpec, UsageError


def choose(given: list[InputSpec], defaults: list[InputSpec], target: str) -> list[InputSpec]:
    """The inputs to make.  Unnamed ``--input-size`` shapes take the names and dtypes of the
    family's default inputs in order (``hf:llama --input-size 1x256`` is 256 token ids);
    without a dtype anything else is float32."""
    if not given:
        if not defaults:
            raise UsageError(
                f"{target} has no default inputs: give their shapes with --input-size, e.g. "
                "--input-size 1,3,224,224 (several for several inputs; 1x128:long for token ids; "
                "input_ids=1x128:long for a keyword argument)"
            )
        return list(defaults)
    by_name = {d.name: d for d in defaults if d.name}
    out = []
    for i, spec in enumerate(given):
        if spec.name is None and all(g.name is None for g in given) and i < len(defaults):
            default = defaults[i]
            out.append(InputSpec(spec.shape, spec.dtype or default.dtype, default.name))
            continue
        default_dtype = by_name[spec.name].dtype if spec.name in by_name else None
        out.append(InputSpec(spec.shape, spec.dtype or default_dtype or torch.float32, spec.name))
    names = [s.name for s in out if s.name]
    if len(set(names)) != len(names):
        raise UsageError(f"an input is named twice in --input-size: {names}")
    seen_named = False
    for s in out:
        if s.name is None and seen_named:
            raise UsageError("give positional --input-size shapes before named ones (name=shape)")
        seen_named = seen_named or s.name is not None
    return out


def make(specs: list[InputSpec], device: str | None) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]:
    """Positional and keyword tensors: random floats, zero integers (always valid token ids)."""
    args: list[torch.Tensor] = []
    kwargs: dict[str, torch.Tensor] = {}
    for spec in specs:
        dtype = spec.dtype or torch.float32
        try:
            if dtype.is_floating_point or dtype.is_complex:
                t = torch.randn(spec.shape, dtype=dtype, device=device)
            else:
                t = torch.zeros(spec.shape, dtype=dtype, device=device)
        except (RuntimeError, NotImplementedError) as e:
            raise UsageError(
                f"cannot make an input of shape {spec.shape} and dtype {dtype} on {device or 'cpu'}: "
                f"{str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__}"
            ) from e
        if spec.name is None:
            args.append(t)
        else:
            kwargs[spec.name] = t
    return tuple(args), kwargs


def call_arguments(specs: list[InputSpec], device: str | None) -> dict[str, Any]:
    """Keyword arguments for ``draw_graph``/``summary``: ``input_data`` (and forward keywords
    beside positional inputs)."""
    args, kwargs = make(specs, device)
    if not args:
        return {"input_data": kwargs}
    return {"input_data": args, **kwargs}


def describe(specs: list[InputSpec]) -> str:
    """``input_ids=1x128:int64`` for progress lines."""
    parts = []
    for s in specs:
        dtype = str(s.dtype or torch.float32).removeprefix("torch.")
        text = "x".join(map(str, s.shape)) + ":" + dtype
        parts.append(f"{s.name}={text}" if s.name else text)
    return ", ".join(parts)

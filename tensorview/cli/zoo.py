"""``timm:<name>`` and ``torchvision:<name>``: a model zoo's architecture without its
pretrained weights (nothing is downloaded), built on meta when recording there."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

import torch

from .targets import Request, Target
from .values import InputSpec, ModelError, UsageError

INSTALL = {"timm": "pip install timm", "torchvision": "pip install torchvision"}


def package(kind: str) -> Any:
    try:
        return importlib.import_module(kind)
    except ImportError as e:
        raise UsageError(
            f"{kind}: targets need the {kind} package, which is not installed here ({e}): {INSTALL[kind]}"
        ) from e


def build_zoo(kind: str, name: str, request: Request) -> Target:
    lib = package(kind)
    if kind == "timm":
        known = list(lib.list_models())
        make = lambda: lib.create_model(name, pretrained=False, **request.kwargs)  # noqa: E731
    else:
        known = list(lib.models.list_models())
        make = lambda: lib.models.get_model(name, weights=None, **request.kwargs)  # noqa: E731
    if name not in known:
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"{len(known)} models, e.g. {', '.join(known[:3])}"
        raise UsageError(f"{kind} has no model {name!r} ({hint})")
    device = torch.device(request.device) if request.device else torch.device("cpu")
    try:
        with torch.device(device):
            model = make()
    except TypeError as e:
        raise UsageError(f"bad --kwargs for {kind}:{name}: {e}") from e
    except Exception as e:
        raise ModelError(f"building {kind}:{name} failed: {type(e).__name__}: {e}") from e
    shape = (3, 224, 224)
    cfg = getattr(model, "pretrained_cfg", None) or getattr(model, "default_cfg", None)
    if isinstance(cfg, dict) and len(cfg.get("input_size", ())) == 3:
        shape = tuple(cfg["input_size"])
    inputs = [InputSpec((request.batch_size, *shape), torch.float32)]
    return Target(model.eval(), name, inputs, [f"{kind}=={getattr(lib, '__version__', '?')}"])

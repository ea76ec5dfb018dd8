"""What to draw: a target string becomes an ``nn.Module`` and the inputs its family wants.

``path/to/file.py:NAME`` and ``package.module:NAME`` (``NAME`` an ``nn.Module`` class, a
function returning one, or an instance; dotted names reach attributes), ``hf:<model_type>``
and ``hf:<config.json>`` (transformers, see hf.py), ``timm:<name>``, ``torchvision:<name>``
(zoo.py).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from torch import nn

from .values import FAMILIES, FORMS, InputSpec, ModelError, UsageError


@dataclass
class Target:
    """A built model and what is known about it."""

    model: nn.Module
    #: short name for default file names (``llama``, ``build_model``)
    name: str
    #: the inputs to use when none are given (empty: the user must give ``--input-size``)
    inputs: list[InputSpec] = field(default_factory=list)
    #: files whose contents define the model (for caches); a version string stands for a package
    sources: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Request:
    """How to build a target: the target string and the options that shape the model."""

    spec: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    task: str | None = None
    device: str = "meta"
    seq_len: int = 128
    batch_size: int = 1


def split_target(spec: str) -> tuple[str, str]:
    """``(kind, rest)``: kind is a family name or ``"python"``."""
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in FAMILIES:
        if not rest:
            raise UsageError(f"target {spec!r} names no model after {prefix}: (targets are {FORMS})")
        return prefix, rest
    return "python", spec


def build(request: Request) -> Target:
    """The model of ``request.spec`` (``UsageError`` for what was typed wrong,
    ``ModelError`` when the user's code or the library fails)."""
    kind, rest = split_target(request.spec)
    if kind != "hf" and (request.config or request.task):
        raise UsageError(f"--config and --task apply to hf: targets only, not to {request.spec!r}")
    if kind == "hf":
        from .hf import build_hf

        return build_hf(rest, request)
    if kind in ("timm", "torchvision"):
        from .zoo import build_zoo

        return build_zoo(kind, rest, request)
    return build_python(rest, request)


def sources_of(spec: str) -> list[str]:
    """What defines the model of ``spec``, known without building it: its module file or
    config file, or ``package==version`` for models that come from a package."""
    kind, rest = split_target(spec)
    if kind == "python":
        path = module_file(rest.rpartition(":")[0])
        return [path] if path else []
    if kind == "hf":
        path = os.path.join(rest, "config.json") if os.path.isdir(rest) else rest
        if os.path.isfile(path):
            return [os.path.abspath(path)]
        kind = "transformers"
    try:
        return [f"{kind}=={importlib.metadata.version(kind)}"]
    except importlib.metadata.PackageNotFoundError:
        return [f"{kind} (not installed)"]


def build_python(spec: str, request: Request) -> Target:
    location, sep, name = spec.rpartition(":")
    if not sep or not location or not name:
        raise UsageError(f"bad target {spec!r}: expected one of {FORMS}")
    module = load_module(location)
    obj = _attribute(module, name, location)
    model = instantiate(obj, request.kwargs, f"{location}:{name}")
    sources = [module.__file__] if module.__file__ else []
    return Target(model, name.rpartition(".")[2], [], sources)


def is_file(location: str) -> bool:
    return location.endswith(".py") or os.sep in location or "/" in location


def module_file(location: str) -> str | None:
    """The source file of ``location`` (a path, or a module name found without importing it)."""
    if is_file(location):
        return os.path.abspath(location) if os.path.isfile(location) else None
    _add_path(os.getcwd())
    try:
        spec = importlib.util.find_spec(location)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin and os.path.isfile(spec.origin) else None


def load_module(location: str, *, reload: bool = False) -> ModuleType:
    """Import a ``.py`` file (its folder goes on ``sys.path``, as ``python file.py`` does)
    or a module by name (the current folder on ``sys.path``, as ``python -m`` does)."""
    if is_file(location):
        path = os.path.abspath(location)
        if not os.path.isfile(path):
            raise UsageError(f"no such file: {location!r} (targets are {FORMS})")
        _add_path(os.path.dirname(path))
        name = "_tensorview_target_" + hashlib.sha1(path.encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"cannot import {location!r}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            del sys.modules[name]
            raise ModelError(f"importing {location} failed: {type(e).__name__}: {e}") from e
        return module
    _add_path(os.getcwd())
    try:
        if reload and location in sys.modules:
            return importlib.reload(sys.modules[location])
        return importlib.import_module(location)
    except ModuleNotFoundError as e:
        if e.name and (location == e.name or location.startswith(e.name + ".")):
            raise UsageError(
                f"no module named {e.name!r} (for target module {location!r}); run from the folder "
                "that holds the package, or give a file path such as path/to/models.py:NAME"
            ) from e
        raise ModelError(f"importing {location} failed: {type(e).__name__}: {e}") from e
    except Exception as e:
        raise ModelError(f"importing {location} failed: {type(e).__name__}: {e}") from e


def _add_path(folder: str) -> None:
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _attribute(module: ModuleType, name: str, location: str) -> Any:
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            found = sorted(
                k
                for k, v in vars(module).items()
                if not k.startswith("_") and (isinstance(v, nn.Module) or callable(v)) and _defined_in(v, module)
            )
            raise UsageError(f"{location} has no {name!r}; models and factories there: {found or 'none'}")
        obj = getattr(obj, part)
    return obj


def _defined_in(value: Any, module: ModuleType) -> bool:
    if isinstance(value, nn.Module):
        return True
    return getattr(value, "__module__", None) == module.__name__


def instantiate(obj: Any, kwargs: dict[str, Any], what: str) -> nn.Module:
    """An instance from an instance, a class or a factory, called with ``kwargs``."""
    if isinstance(obj, nn.Module):
        if kwargs:
            raise UsageError(f"{what} is a model instance: --kwargs needs a class or a factory function")
        return obj
    if not callable(obj):
        raise UsageError(f"{what} is a {type(obj).__name__}, not an nn.Module, a class or a function returning one")
    try:
        inspect.signature(obj).bind(**kwargs)
    except TypeError as e:
        raise UsageError(f"bad --kwargs for {what}: {e} (got {kwargs!r})") from e
    except ValueError:  # no signature to check (a builtin): calling tells
        pass
    try:
        model = obj(**kwargs)
    except Exception as e:
        raise ModelError(f"building the model with {what}(**{kwargs!r}) failed: {type(e).__name__}: {e}") from e
    if not isinstance(model, nn.Module):
        raise UsageError(f"{what}(...) returned a {type(model).__name__}, not an nn.Module")
    return model

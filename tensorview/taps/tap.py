"""The tap classes: one hook per chosen module, recorded values kept per module."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle
from typing_extensions import Self

from ..errors import InvalidInputError, InvalidTypeError
from ..recording.tree import map_tensors
from .select import Indices, Names, Types, select

Record = Callable[[Any], None]


@dataclass
class _Entry:
    """One tapped module: its hook and what it recorded so far."""

    path: str
    module: nn.Module
    handle: RemovableHandle | None
    data: Any  # list of values, or the reduced value (None before the first)
    samples: int = 0

    def unhook(self) -> None:
        if self.handle is None:
            return
        self.handle.remove()
        self.handle = None
        # a full backward hook marks the module for good; with no backward hook left,
        # unmark it so that it is left as found (either kind may be registered again)
        if not self.module._backward_hooks and self.module._is_full_backward_hook is True:
            self.module._is_full_backward_hook = None


class Tap:
    """Base class: records one kind of value for every chosen module.

    ``condition``: a no-argument callable; a call is recorded only when it returns True.
    ``reduction``: ``reduction(accumulated, new) -> accumulated`` folds values into one
    running value (the first value is stored as is) instead of keeping a list.

    Values are stored as ``detach().clone()`` copies on their original device, so later
    in-place changes (or optimizer steps) never alter what was recorded.  A hook's tuple
    with a single element (one positional input, one gradient) is recorded as that
    element; longer tuples are recorded as tuples.
    """

    def __init__(
        self, *, condition: Callable[[], bool] | None = None, reduction: Callable[[Any, Any], Any] | None = None
    ) -> None:
        for name, fn in (("condition", condition), ("reduction", reduction)):
            if fn is not None and not callable(fn):
                raise InvalidTypeError(f"{name} must be a callable or None, got {fn!r}")
        self.condition = condition
        self.reduction = reduction
        self._entries: list[_Entry] = []

    # -- what subclasses provide ------------------------------------------------
    def _hook(self, module: nn.Module, record: Record) -> RemovableHandle:
        raise NotImplementedError

    # -- choosing modules --------------------------------------------------------
    def modules(self, model: nn.Module, *, types: Types = None, indices: Indices = None, names: Names = None) -> Self:
        """Tap ``model`` and its submodules, recursively (``model.named_modules()``, the
        model itself included with path ``""``).  ``types``: module classes; ``indices``:
        positions in that iteration order; ``names``: fnmatch patterns over qualified
        names (``"layer*.0.conv1"``).  Several filters combine with AND; none taps all."""
        return self._add(select(model, recursive=True, types=types, indices=indices, names=names))

    def children(self, model: nn.Module, *, types: Types = None, indices: Indices = None, names: Names = None) -> Self:
        """Like ``modules`` but over the direct children of ``model`` only."""
        return self._add(select(model, recursive=False, types=types, indices=indices, names=names))

    def _add(self, chosen: list[tuple[str, nn.Module]]) -> Self:
        tapped = {id(e.module) for e in self._entries if e.handle is not None}
        for path, module in chosen:
            if id(module) in tapped:  # already tapped by this tap: one record per call
                continue
            entry = _Entry(path, module, None, [] if self.reduction is None else None)
            entry.handle = self._hook(module, partial(self._record, entry))
            self._entries.append(entry)
        return self

    def _record(self, entry: _Entry, value: Any) -> None:
        if self.condition is not None and not self.condition():
            return
        value = _snapshot(value[0] if isinstance(value, tuple) and len(value) == 1 else value)
        if self.reduction is None:
            entry.data.append(value)
        elif entry.samples == 0:
            entry.data = value
        else:
            entry.data = self.reduction(entry.data, value)
        entry.samples += 1

    # -- reading -----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, key: int | str) -> Any:
        """Module ``key``'s data: a list of recorded values, or the reduced value (``None``
        before the first record).  ``key`` is a position or a qualified module path."""
        return self._entry(key).data

    def __iter__(self) -> Iterator[Any]:
        return (e.data for e in self._entries)

    @property
    def paths(self) -> list[str]:
        """Qualified names of the tapped modules, in tap order (``""`` is the model itself)."""
        return [e.path for e in self._entries]

    def samples(self, key: int | str) -> int:
        """How many calls module ``key`` recorded (calls where ``condition`` held)."""
        return self._entry(key).samples

    def _entry(self, key: int | str) -> _Entry:
        if isinstance(key, str):
            for e in self._entries:
                if e.path == key:
                    return e
            raise InvalidInputError(f"no tapped module with path {key!r} (tapped: {self.paths!r})")
        if isinstance(key, bool) or not isinstance(key, int):
            raise InvalidTypeError(f"tap index must be an int or a module path, got {key!r}")
        if not -len(self._entries) <= key < len(self._entries):
            raise InvalidInputError(f"tap index {key} out of range ({len(self._entries)} modules tapped)")
        return self._entries[key]

    # -- changing ----------------------------------------------------------------
    def apply(self, fn: Callable[[Any], Any]) -> Self:
        """Replace each module's data by ``fn(data)`` (``data`` is the list, or the reduced
        value).  Meant for after recording: in list mode further records need a list."""
        for e in self._entries:
            e.data = fn(e.data)
        return self

    def save(self, directory: str | Path) -> list[Path]:
        """Write each module's data to ``directory/<path>.pt`` (the model itself: ``model.pt``),
        loadable with ``torch.load``.  Returns the files written.  Every file is directly
        inside ``directory``: characters that cannot be in a file name are written as
        ``%XX`` (see ``file_name``)."""
        directory = Path(directory)
        files = [directory / file_name(e.path) for e in self._entries]
        if len(set(files)) != len(files):
            raise InvalidInputError(f"two tapped modules would be saved to the same file: {self.paths!r}")
        directory.mkdir(parents=True, exist_ok=True)
        for e, file in zip(self._entries, files):
            torch.save(e.data, file)
        return files

    def remove(self, key: int | str) -> None:
        """Stop tapping module ``key`` and drop its data (later modules move up one)."""
        entry = self._entry(key)
        entry.unhook()
        self._entries.remove(entry)

    def remove_all(self) -> None:
        """Stop tapping every module and drop all data."""
        self.close()
        self._entries.clear()

    def close(self) -> None:
        """Remove every hook from the model; the recorded data stays readable."""
        for e in self._entries:
            e.unhook()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- drawing -------------------------------------------------------------------
    def annotate(self, graph: Any) -> Any:
        """Add the annotation ``"stats"`` (``{"mean", "std", "min", "max", "samples"}`` of
        each tapped module's data) to its module nodes of ``graph`` (a ``ComputationGraph``
        or the IR ``Graph``): ``graph.annotations.of(node.id)["stats"]``; drawings show it
        from then on.  Returns ``graph``."""
        from .stats import annotate

        return annotate(graph, [(e.path, e.data, e.samples) for e in self._entries])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(paths={self.paths!r}, samples={[e.samples for e in self._entries]!r})"


class ForwardInput(Tap):
    """Positional arguments of each module call, taken before ``forward`` runs (so a
    module that changes its input in place, like ``ReLU(inplace=True)``, is recorded
    with the input it received)."""

    def _hook(self, module: nn.Module, record: Record) -> RemovableHandle:
        return module.register_forward_pre_hook(lambda _m, args: record(args))


class ForwardOutput(Tap):
    """What each module call returned."""

    def _hook(self, module: nn.Module, record: Record) -> RemovableHandle:
        return module.register_forward_hook(lambda _m, _args, output: record(output))


class BackwardInput(Tap):
    """Gradients with respect to the module's inputs (torch's ``grad_input``); ``None``
    for inputs that need no gradient."""

    def _hook(self, module: nn.Module, record: Record) -> RemovableHandle:
        return module.register_full_backward_hook(lambda _m, grad_input, _go: record(grad_input))


class BackwardOutput(Tap):
    """Gradients with respect to the module's outputs (torch's ``grad_output``)."""

    def _hook(self, module: nn.Module, record: Record) -> RemovableHandle:
        return module.register_full_backward_hook(lambda _m, _gi, grad_output: record(grad_output))


#: characters a tap file name never holds: path separators, ``:`` (a drive on Windows) and
#: ``%`` itself (so that the encoding is one-to-one); non-printable ones are encoded too
_UNSAFE_IN_FILE_NAMES = frozenset("%/\\:")
#: longest file name in bytes, ``.pt`` included (file systems allow 255)
_MAX_FILE_NAME = 200


def file_name(path: str) -> str:
    """The file name of a tapped module's data: ``layer1.0.conv1.pt`` (``model.pt`` for the
    model itself).  Module names are user data (``setattr(model, "../x", m)`` works), so
    each character that is not printable or is one of ``% / \\ :`` is written as ``%XX``
    (its UTF-8 bytes): distinct paths get distinct names, and none leaves the directory.
    A name too long for file systems keeps its start and ends with a hash of the path."""
    name = path or "model"
    if not all(c.isprintable() and c not in _UNSAFE_IN_FILE_NAMES for c in name):
        name = "".join(
            c
            if c.isprintable() and c not in _UNSAFE_IN_FILE_NAMES
            else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
            for c in name
        )
    if len(name.encode("utf-8")) > _MAX_FILE_NAME - 3:
        digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = name.encode("utf-8")[:150].decode("utf-8", "ignore") + "-" + digest
    return name + ".pt"


def _snapshot(value: Any) -> Any:
    """Detached plain-tensor copies of the tensors in ``value`` (containers kept).  Copying
    bypasses ``__torch_function__`` (subclasses and modes), so a tap left on while
    tensorview records adds no ``detach``/``clone`` nodes to the graph and keeps no
    recording tensor."""

    def copy(t: torch.Tensor) -> torch.Tensor:
        return t.detach().clone().as_subclass(torch.Tensor)

    with torch._C.DisableTorchFunction():
        return map_tensors(value, copy)

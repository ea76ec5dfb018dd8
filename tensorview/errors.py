"""One small exception hierarchy.  Each error subclasses the matching builtin too, so
``except ValueError`` in user code keeps working."""

from __future__ import annotations

import contextlib
import pickle
import re
import sys
import types
from typing import Any


class TensorviewError(Exception):
    """Base class of every error tensorview raises on purpose."""


class InvalidInputError(TensorviewError, ValueError):
    """A bad argument: the message names the value and what is allowed."""


class InvalidTypeError(TensorviewError, TypeError):
    """An argument of the wrong type: the message names the value and what is allowed."""


class InputChoiceError(InvalidInputError, RuntimeError):
    """``input_size`` and ``input_data`` given together or neither, or an unknown ``mode``:
    also a ``RuntimeError``, as torchview raises for these (``except RuntimeError`` works)."""


class InputSizeTypeError(InvalidInputError, TypeError):
    """``input_size`` of a type that cannot be a shape (a dict, a str): also a ``TypeError``,
    as torchview raises for these."""


class InvalidDeviceError(InvalidInputError, RuntimeError):
    """A device torch does not know or this machine does not have.  torch (and torchinfo,
    torchview) raise ``RuntimeError`` for these, so ``except RuntimeError`` catches it too."""


class InputConflictError(InvalidInputError, RuntimeError):
    """Arguments that exclude each other (``input_size`` and ``input_data`` both given):
    a ``RuntimeError`` too, as torchinfo's."""


class RecordingError(TensorviewError, RuntimeError):
    """The model's forward raised while recording.

    ``graph`` is the partial graph recorded up to the failure (a ``ComputationGraph``,
    drawable like any other) with the failing module calls and op marked; ``module_path``
    is the path of the innermost module that was executing.  The original exception is
    chained as ``__cause__``.  Made by ``recording_error``, it is also an instance of the
    original exception's type (``except torch.OutOfMemoryError:`` still works) and keeps
    its fields (``errno``, ``filename``...) and attributes; it pickles (the partial graph
    and attributes that do not pickle are left out).
    """

    graph: Any = None
    module_path: str | None = None
    #: what the message says to do about the failure, "" where it says nothing
    hint: str = ""

    def __init__(self, message: str, *, graph: Any = None, module_path: str | None = None) -> None:
        super().__init__(message)
        self.graph = graph
        self.module_path = module_path

    def __str__(self) -> str:  # the message, also where the original type formats its own
        args = self.args
        return args[0] if len(args) == 1 and isinstance(args[0], str) else super().__str__()

    def __reduce__(self) -> Any:
        d = vars(self)
        state = {k: v for k, v in d.items() if k not in ("_tv_base", "_tv_fields") and _pickles(v)}
        fields = {k: v for k, v in d.get("_tv_fields", {}).items() if _pickles(v)}
        base = d.get("_tv_base")
        return _rebuild, (base if base is not None and _importable(base) else None, str(self), fields, state)


class GraphLintError(TensorviewError, AssertionError):
    """A recorded or transformed graph breaks an invariant (see ``Graph.lint``)."""


class RenderError(TensorviewError, RuntimeError):
    """Rendering failed (for example the Graphviz ``dot`` program is missing)."""


def choices_error(what: str, value: Any, allowed: Any) -> InvalidInputError:
    """``unknown graph_dir: 'XY' (must be one of ['TB', 'LR', 'BT', 'RL'])``."""
    return InvalidInputError(f"unknown {what}: {value!r} (must be one of {sorted(allowed)!r})")


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for an error message, cut at ``limit`` characters; a ``__repr__``
    that raises never hides the error being reported (the type is named instead).

    >>> class Bad:
    ...     def __repr__(self): raise RuntimeError("no")
    >>> shown(Bad()), shown("x" * 100)[-4:]
    ('<Bad object (its repr raised RuntimeError)>', 'x...')
    """
    try:
        text = repr(value)
    except Exception as e:  # noqa: BLE001 - whatever the user's __repr__ does
        return f"<{type(value).__name__} object (its repr raised {type(e).__name__})>"
    if not isinstance(text, str):
        return f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit): \S")


def cause_first(text: str) -> tuple[str, str]:
    """A long error text (TorchScript's interpreter, a chained C++ error) as ``(cause,
    details)``: the innermost ``SomeError: message`` line, repeated type prefixes removed,
    and the whole text; a short one is its own cause, with no details.

    >>> cause_first("RuntimeError: failed in X.\\nTraceback:\\n  f\\nRuntimeError: RuntimeError: bad device\\n  at: g")
    ('RuntimeError: bad device', 'RuntimeError: failed in X.\\nTraceback:\\n  f\\nRuntimeError: RuntimeError: bad device\\n  at: g')
    """
    lines = text.splitlines()
    if len(lines) <= 3:
        return text, ""
    inner = [line for line in lines[1:] if _ERROR_LINE.match(line)]
    if not inner:
        return lines[0], text
    cause = inner[-1].strip()
    kind, _, rest = cause.partition(": ")
    while rest.startswith(kind + ": "):
        rest = rest[len(kind) + 2 :]
    return f"{kind}: {rest}", text


def describe(exc: BaseException) -> str:
    """``TypeName: message`` for any exception: never empty, never raising (``str(exc)``
    can be empty, or raise)."""
    name = type(exc).__name__
    for show in (str, repr):
        try:
            text = show(exc)
        except Exception:  # noqa: BLE001 - an exception that cannot print itself
            continue
        if text and text != f"{name}()":
            return f"{name}: {text}"
    return f"{name} (no message)"


def recording_error(exc: BaseException, message: str, *, graph: Any = None, module_path: str | None = None) -> Any:
    """A ``RecordingError`` that is also an instance of ``type(exc)``, with ``exc``'s fields
    and attributes (a plain ``RecordingError`` where Python cannot make one)."""
    err = _typed(type(exc), message, exc.args, _fields(exc), dict(getattr(exc, "__dict__", {})))
    err.graph, err.module_path = graph, module_path
    return err


def add_hint(err: RecordingError, hint: str) -> None:
    """Append ``hint`` (what to do) to the message of ``err``."""
    err.args = (f"{err}\n{hint}",)
    err.hint = f"{err.hint}\n{hint}" if err.hint else hint


#: what every exception has (args, __cause__...): not fields of a particular type
_BASE_FIELDS = frozenset(vars(BaseException))


def _fields(exc: BaseException) -> dict[str, Any]:
    """The fields of ``exc``'s builtin types (``OSError.filename``, ``UnicodeError.start``)."""
    found: dict[str, Any] = {}
    for c in type(exc).__mro__:
        if c.__module__ != "builtins":
            continue
        for name, d in vars(c).items():
            if name.startswith("__") or name in _BASE_FIELDS:
                continue
            if not isinstance(d, (types.MemberDescriptorType, types.GetSetDescriptorType)):
                continue
            with contextlib.suppress(AttributeError):  # unset (BlockingIOError.characters_written)
                found.setdefault(name, getattr(exc, name))
    return found


_CLASSES: dict[type[BaseException], type[RecordingError]] = {}


def _class_for(base: type[BaseException]) -> type[RecordingError]:
    if issubclass(RecordingError, base):  # RuntimeError, Exception: nothing to add
        return RecordingError
    cls = _CLASSES.get(base)
    if cls is None:
        name = f"RecordingError[{base.__name__}]"
        ns = {"__module__": __name__, "__qualname__": name}
        for bases in ((RecordingError, base), (base, RecordingError)):
            try:
                cls = type(name, bases, ns)
                break
            except TypeError:  # no consistent MRO or layout, or not subclassable
                continue
        else:
            cls = RecordingError
        _CLASSES[base] = cls
    return cls


def _typed(
    base: type[BaseException], message: str, args: tuple[Any, ...], fields: dict[str, Any], state: dict[str, Any]
) -> Any:
    cls = _class_for(base)
    err: Any = None
    if cls is not RecordingError:
        # made by the nearest builtin type, as the original was, then given its fields
        builtin: Any = next(c for c in base.__mro__ if c.__module__ == "builtins")
        # (MemoryError's own __new__ refuses a class whose first builtin base is another:
        # then the class's __new__, as calling it would)
        for new_args in (args, (message,), ()):
            for new in (builtin.__new__, cls.__new__):
                try:
                    err = new(cls, *new_args)
                    builtin.__init__(err, *new_args)
                    break
                except Exception:  # noqa: BLE001 - the type wants other arguments: try fewer
                    err = None
            if err is not None:
                break
    if err is None:
        return RecordingError(message)
    for name, value in fields.items():
        with contextlib.suppress(AttributeError, TypeError):  # read-only
            setattr(err, name, value)
    err.__dict__.update(state)
    err._tv_base, err._tv_args, err._tv_fields = base, args, fields
    err.args = (message,)
    return err


def _rebuild(base: type[BaseException] | None, message: str, fields: dict[str, Any], state: dict[str, Any]) -> Any:
    """Unpickle a ``RecordingError`` (see ``RecordingError.__reduce__``)."""
    if base is None:
        err = RecordingError(message)
    else:
        err = _typed(base, message, state.pop("_tv_args", ()), fields, {})
    err.__dict__.update(state)
    return err


def _pickles(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - whatever pickle cannot take is left out
        return False
    return True


def _importable(cls: type) -> bool:
    """Whether pickle can find ``cls`` by name (a class defined in a function cannot)."""
    obj: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is cls

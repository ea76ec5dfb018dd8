"""One small exception hierarchy.  Each error subclasses the matching builtin too, so
``except ValueError`` in user code keeps working."""

from __future__ import annotations

from typing import Any


class TensorviewError(Exception):
    """Base class of every error tensorview raises on purpose."""


class InvalidInputError(TensorviewError, ValueError):
    """A bad argument: the message names the value and what is allowed."""


class InvalidTypeError(TensorviewError, TypeError):
    """An argument of the wrong type: the message names the value and what is allowed."""


class RecordingError(TensorviewError, RuntimeError):
    """The model's forward raised while recording.

    ``graph`` is the partial graph recorded up to the failure (a ``ComputationGraph``,
    drawable like any other) with the failing module calls and op marked; ``module_path``
    is the path of the innermost module that was executing.  The original exception is
    chained as ``__cause__``.
    """

    def __init__(self, message: str, *, graph: Any = None, module_path: str | None = None) -> None:
        super().__init__(message)
        self.graph = graph
        self.module_path = module_path


class GraphLintError(TensorviewError, AssertionError):
    """A recorded or transformed graph breaks an invariant (see ``Graph.lint``)."""


class RenderError(TensorviewError, RuntimeError):
    """Rendering failed (for example the Graphviz ``dot`` program is missing)."""


def choices_error(what: str, value: Any, allowed: Any) -> InvalidInputError:
    """``unknown graph_dir: 'XY' (must be one of ['TB', 'LR', 'BT', 'RL'])``."""
    return InvalidInputError(f"unknown {what}: {value!r} (must be one of {sorted(allowed)!r})")

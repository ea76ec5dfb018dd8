"""Interrupts at any moment leave nothing behind (issue 8 B, issue 21 B): ``draw_graph``
calls and a ``with Recorder`` block interrupted at random bytecodes by every kind of
asynchronous exception: Ctrl-C, a SIGALRM handler raising (pytest-timeout), a SIGTERM
handler raising ``SystemExit``, ``PyThreadState_SetAsyncExc`` (the harness is
tests/fixtures/interrupts.py; ``python bench/interrupts.py`` runs 1,000)."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import torch
from torch import nn

import tensorview as tv
from tensorview.recording import is_patched
from tensorview.recording import modulecall as _modulecall

from .fixtures import interrupts
from .fixtures import models as zoo

#: per kind of interrupt; bounded: about 5 s of CPU in all (bench/interrupts.py runs 1,000)
PER_KIND = 60


def test_random_interrupts_of_every_kind_leave_nothing_behind() -> None:
    kinds = tuple(interrupts.SIGNALS)
    assert kinds == ("sigint", "sigalrm", "sigterm", "async_exc")
    report = interrupts.run(PER_KIND * len(kinds), seed=8, kinds=kinds)
    assert report.per_signal == {k: PER_KIND for k in kinds}
    # each call ended in the exception sent, unless CPython itself discarded it (raised in a
    # weakref callback, where a real Ctrl-C is lost too) or the call ended before the bytecode
    # drawn (the count is calibrated on one run): those are counted apart, and rare
    n = report.iterations
    assert report.interrupted + report.lost_by_python + report.missed == n
    assert report.lost_by_python <= n // 50 and report.missed <= n // 50
    assert report.total() == 0, f"{dict(report.leftovers_per_signal)}: {dict(report.leftovers)}, e.g. {report.examples}"


def test_a_holder_that_never_released_the_patch_is_let_go_by_the_next_recording() -> None:
    """An exception that landed in a recording's clean-up before it released its share of
    the ``nn.Module.__call__`` patch: the next recording in the thread heals it."""
    original = nn.Module.__call__
    _modulecall.MODULE_CALL.acquire()  # the share an interrupted recording kept
    try:
        assert is_patched()
        graph = tv.draw_graph(zoo.Shared(), input_size=(2, 4), depth=9)
        assert nn.Module.__call__ is original and not is_patched()
        assert [m.path for m in graph.graph.modules()] == ["", "fc", "fc", "fc"]
    finally:
        nn.Module.__call__ = original
        _modulecall.MODULE_CALL._holders.clear()
        _modulecall.MODULE_CALL.installed = None


def test_a_stale_wrapper_left_installed_heals_at_the_next_recording() -> None:
    original = nn.Module.__call__
    nn.Module.__call__ = _modulecall._make_call(original)  # what an interrupted recording left behind
    try:
        graph = tv.draw_graph(zoo.Shared(), input_size=(2, 4), depth=9)
        assert nn.Module.__call__ is original and not is_patched()  # never saved as "original"
        assert [m.path for m in graph.graph.modules()] == ["", "fc", "fc", "fc"]  # each call recorded once
        assert type(zoo.Shared()(torch.randn(2, 4))) is torch.Tensor
    finally:
        nn.Module.__call__ = original


def test_an_interrupt_inside_torchs_mode_guard_leaves_no_mode_on_the_stack() -> None:
    """Ctrl-C in the exit of torch's ``_pop_mode_temporarily`` (after our mode's
    ``__torch_function__`` returned, before torch pushed the mode back): the push must
    happen before the recording cleans up, not when the exception is collected later."""
    import gc
    import sys

    import torch.nn.functional as F

    guard = torch.overrides._pop_mode_temporarily.__wrapped__.__code__  # type: ignore[attr-defined]
    fired = []

    def interrupt(frame: Any, event: str, arg: object) -> Any:
        if event == "opcode":  # inside __exit__, before it resumes the generator
            fired.append(1)
            raise KeyboardInterrupt
        return interrupt

    def tracer(frame: Any, event: str, arg: object) -> Any:
        gen = getattr(frame.f_locals.get("self"), "gen", None)
        if (
            event == "call"
            and not fired
            and frame.f_code.co_name == "__exit__"
            and getattr(gen, "gi_code", None) is guard
        ):
            frame.f_trace_opcodes = True
            return interrupt
        return None

    class Norm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.layer_norm(x, (4,))  # a Python-level torch function: torch's Python override path

    model = Norm()
    try:
        sys.settrace(tracer)  # type: ignore[arg-type]
        with tv.Recorder(model):
            model(torch.randn(2, 4))
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    gc.collect()
    assert fired and torch._C._len_torch_function_stack() == 0


def test_a_deferral_left_in_effect_heals_at_the_next_recording() -> None:
    """An exception that cut a recording's clean-up short before it put the signal handlers
    back (its frame is gone, no Recorder is open): the next recording heals it first
    instead of taking it for an outer recording."""
    import signal

    from tensorview.recording import interrupts as guard

    before = signal.getsignal(signal.SIGINT)

    def interrupted_recording() -> None:
        guard.deferred(None).__enter__()  # and never exited

    interrupted_recording()
    assert signal.getsignal(signal.SIGINT) is not before and guard._STATE.owner is not None
    graph = tv.draw_graph(zoo.Shared(), input_size=(2, 4), depth=9)
    assert signal.getsignal(signal.SIGINT) is before and guard._STATE.owner is None
    assert [m.path for m in graph.graph.modules()] == ["", "fc", "fc", "fc"]


def test_an_asynchronous_exception_at_the_start_of_a_recorders_exit_leaves_nothing_behind() -> None:
    """``PyThreadState_SetAsyncExc`` (no handler defers it) landing in ``Recorder.__exit__``
    before its clean-up steps started left ``nn.Module.__call__`` patched and the session in
    the thread (found by the harness above at another seed); now the steps run first thing,
    and again if one lands before them."""
    from tensorview.recording.recorder import BaseRecorder
    from tensorview.recording.tensor import current_session

    code = BaseRecorder.__exit__.__code__
    model, x = zoo.Shared(), torch.randn(2, 4)
    # each of its first bytecodes but its very first (RESUME: no Python code can guard the
    # first bytecode of a function; the next recording heals that, tested above)
    for at in range(2, 9):
        seen = [0]

        def trace(frame: Any, event: str, arg: Any, at: int = at, seen: list[int] = seen) -> Any:
            if frame.f_code is not code:
                return None
            frame.f_trace_opcodes = True
            if event == "opcode":
                seen[0] += 1
                if seen[0] == at:
                    interrupts._send_async(KeyboardInterrupt)
            return trace

        raised = False
        with contextlib.suppress(KeyboardInterrupt):
            with tv.Recorder(model):
                model(x)
                sys.settrace(trace)
            raised = True
        sys.settrace(None)
        assert not raised or seen[0] < at  # the interrupt was delivered
        assert not is_patched() and current_session() is None, at

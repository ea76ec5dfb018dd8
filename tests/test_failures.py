"""Failures corrupt nothing (issue 8 B): errors keep their type and pickle, the module
named is the one the exception left, stale RecorderTensors are plain tensors, and
draw_graph never changes the caller's model (flags, BatchNorm statistics), also not
while it runs.  Ctrl-C at any moment: tests/test_interrupts.py."""

from __future__ import annotations

import contextlib
import copy
import pickle
import sys
import threading
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.recording import is_patched

from .fixtures import models as zoo

# -- errors keep their type ---------------------------------------------------------------


class WithFields(Exception):
    """An exception whose __init__ takes other arguments than it passes on."""

    def __init__(self, code: int, where: str) -> None:
        super().__init__(f"code {code} at {where}")
        self.code = code
        self.where = where


class StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print myself")


def _unicode_error() -> UnicodeDecodeError:
    try:
        b"\xff".decode("utf-8")
    except UnicodeDecodeError as e:
        return e
    raise AssertionError


def _syntax_error() -> SyntaxError:
    try:
        compile("x = = 1", "model.py", "exec")
    except SyntaxError as e:
        return e
    raise AssertionError


ERRORS: list[BaseException] = [
    torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
    MemoryError("cannot allocate"),  # its own __new__ (a free list): issue 21 B4
    NotImplementedError("no kernel for this"),
    RuntimeError("plain runtime error"),
    ValueError("bad value"),
    KeyError("missing_key"),
    FileNotFoundError(2, "No such file or directory", "weights.bin"),
    _unicode_error(),
    _syntax_error(),
    UnicodeDecodeError("utf-8", b"", 0, 0, ""),  # str() is not helpful
    ValueError(),  # str() is ''
    StrRaises(),  # str() raises
    WithFields(7, "inner"),
]
if sys.version_info >= (3, 11):
    ERRORS.append(ExceptionGroup("several", [ValueError("a"), TypeError("b")]))  # noqa: F821


class RaiseInside(nn.Module):
    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise self.exc


class Outer(nn.Module):
    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.inner = RaiseInside(exc)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(self.fc(x))


@pytest.mark.parametrize("exc", ERRORS, ids=lambda e: type(e).__name__ + (f"({e.args[0]!r:.12})" if e.args else "()"))
def test_recording_error_is_the_original_type_has_a_message_and_pickles(exc: BaseException) -> None:
    with pytest.raises(type(exc)) as info:
        tv.draw_graph(Outer(exc), input_size=(2, 4))
    err: Any = info.value
    assert isinstance(err, tv.RecordingError) and isinstance(err, type(exc))
    assert err.__cause__ is exc and err.module_path == "inner"
    message = str(err)
    assert message.startswith(f"forward raised in module 'inner' (RaiseInside): {type(exc).__name__}")
    assert len(message) > len("forward raised in module 'inner' (RaiseInside): ") + len(type(exc).__name__)
    assert err.graph is not None and [m.path for m in err.graph.graph.modules() if m.failed] == ["", "inner"]
    for name in ("errno", "filename", "encoding", "start", "end", "reason", "lineno", "text", "code", "where"):
        if hasattr(exc, name):  # the original's fields and attributes
            assert getattr(err, name) == getattr(exc, name), name
    if hasattr(exc, "exceptions"):  # an ExceptionGroup
        assert err.exceptions == exc.exceptions
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, tv.RecordingError) and isinstance(back, type(exc))
    assert str(back) == message and back.module_path == "inner"
    assert back.graph is not None and back.graph.graph.to_dict() == err.graph.graph.to_dict()
    if isinstance(exc, WithFields):
        assert (back.code, back.where) == (7, "inner")


def _builtin_exceptions() -> list[type[Exception]]:
    import builtins

    return [
        c
        for c in vars(builtins).values()
        if isinstance(c, type) and issubclass(c, Exception) and not issubclass(c, Warning)
    ]


def test_every_builtin_exception_type_is_kept() -> None:
    """Whatever builtin type forward raises, ``except ThatType`` catches the RecordingError."""
    from tensorview.errors import recording_error

    lost = []
    for cls in _builtin_exceptions():
        try:
            exc = cls("x")
        except TypeError:  # wants other arguments (UnicodeDecodeError...): covered in ERRORS
            continue
        err = recording_error(exc, "forward raised")
        if not (isinstance(err, cls) and isinstance(err, tv.RecordingError)):
            lost.append(cls.__name__)
    assert len(_builtin_exceptions()) > 40 and lost == []


def test_an_error_of_a_local_class_still_pickles_as_a_recording_error() -> None:
    class Local(ValueError):
        pass

    with pytest.raises(Local) as info:
        tv.draw_graph(Outer(Local("made in a function")), input_size=(2, 4))
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is tv.RecordingError  # the class cannot be found by name: the base type is kept
    assert str(back) == str(info.value) and back.module_path == "inner"


# -- the right module is named --------------------------------------------------------------


class CatchesThenFails(nn.Module):
    """``fast`` raises and the model falls back to ``slow``; later ``bad`` raises for real."""

    def __init__(self) -> None:
        super().__init__()
        self.fast = nn.Linear(5, 4)  # wrong size: raises, caught below
        self.slow = nn.Linear(4, 4)
        self.bad = RaiseInside(ValueError("the real failure"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            y = self.fast(x)
        except RuntimeError:
            y = self.slow(x)
        return self.bad(y)


def test_the_module_named_is_the_one_the_exception_left() -> None:
    with pytest.raises(
        ValueError, match=r"forward raised in module 'bad' \(RaiseInside\): ValueError: the real"
    ) as info:
        tv.draw_graph(CatchesThenFails(), input_size=(2, 4))
    err: Any = info.value
    assert err.module_path == "bad"
    assert [m.path for m in err.graph.graph.modules() if m.failed] == ["", "fast", "bad"]  # fast did fail too


def test_an_error_of_the_callers_own_code_is_not_a_recording_error() -> None:
    model = zoo.Raises()
    with pytest.raises(KeyError) as info, tv.Recorder(model):
        with contextlib.suppress(RuntimeError):  # the caller handles the model's failure...
            model(zoo.x4())
        raise KeyError("...and then fails itself")
    assert not isinstance(info.value, tv.RecordingError)
    assert not is_patched()


# -- stale RecorderTensors are plain tensors ----------------------------------------------------


def _fingerprint(graph: tv.ComputationGraph) -> Any:
    g = graph.graph
    return [(type(n).__name__, n.name, n.path) for n in g.nodes], sorted(g.edges)


class MixesIn(nn.Module):
    """A forward that uses tensors kept from an earlier recording (Grad-CAM, features)."""

    def __init__(self, kept: list[torch.Tensor]) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.kept = kept

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x) + self.kept[0]
        return torch.cat([y, self.kept[1].relu()], dim=1)


def test_tensors_kept_by_a_hook_act_as_plain_tensors_in_later_recordings() -> None:
    extractor = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Sigmoid())
    kept: list[torch.Tensor] = []
    for i in (0, 2):
        extractor[i].register_forward_hook(lambda m, args, out: kept.append(out))
    tv.draw_graph(extractor, input_size=(2, 4))
    assert [type(t) for t in kept] == [tv.RecorderTensor] * 2  # what the hooks saw, kept by the user
    plain = [t.detach().as_subclass(torch.Tensor) for t in kept]

    # in a later recording, as inputs of ops inside the forward: constants, no edge from old ids
    stale_graph = tv.draw_graph(MixesIn(kept), input_size=(2, 4), depth=9)
    plain_graph = tv.draw_graph(MixesIn(plain), input_size=(2, 4), depth=9)
    assert _fingerprint(stale_graph) == _fingerprint(plain_graph)
    stale_graph.graph.lint()
    # ...and as the model's input
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    assert _fingerprint(tv.draw_graph(model, input_data=kept[0])) == _fingerprint(
        tv.draw_graph(model, input_data=plain[0])
    )
    # outside a recording: results, copies and pickles are plain tensors
    assert type(kept[0] + 1) is torch.Tensor and torch.equal(kept[0] + 1, plain[0] + 1)
    for copied in (copy.deepcopy(kept), pickle.loads(pickle.dumps(kept))):
        assert [type(t) for t in copied] == [torch.Tensor] * 2
        assert all(torch.equal(a, b) for a, b in zip(copied, plain))


def test_a_stale_tensor_mutated_in_a_later_recording_is_tracked_as_a_plain_one() -> None:
    kept: list[torch.Tensor] = []
    first = nn.Linear(4, 4)
    first.register_forward_hook(lambda m, args, out: kept.append(out))
    tv.draw_graph(first, input_size=(2, 4))

    class Mutates(nn.Module):
        def __init__(self, t: torch.Tensor) -> None:
            super().__init__()
            self.t = t
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.t.mul_(2)  # in place, on a tensor of an earlier recording
            return self.fc(x) * self.t

    stale = tv.draw_graph(Mutates(kept[0]), input_size=(2, 4), depth=9)
    plain = tv.draw_graph(Mutates(kept[0].detach().as_subclass(torch.Tensor)), input_size=(2, 4), depth=9)
    assert _fingerprint(stale) == _fingerprint(plain)


# -- the caller's model is never modified ---------------------------------------------------------


class Normed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.blocks = [nn.Linear(4, 4)]  # a plain list: not registered
        self.head = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.bn(self.fc(x)))


def _state(model: nn.Module) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    return [(n, t, t.detach().clone()) for n, t in (*model.named_parameters(), *model.named_buffers())]


@pytest.mark.parametrize(
    ("start", "mode"), [("eval", "train"), ("train", "train"), ("train", "same"), ("train", "eval")]
)
def test_batchnorm_statistics_and_flags_of_the_caller_never_change(start: str, mode: str) -> None:
    model = Normed().train(start == "train")
    flags = [m.training for m in model.modules()]
    before = _state(model)
    # source=False: the Recorder below records no source lines, and the JSON is compared whole
    graph = tv.draw_graph(model, input_data=torch.randn(8, 4) * 5 + 3, mode=mode, source=False)
    assert [m.training for m in model.modules()] == flags
    after = _state(model)
    assert [n for n, *_ in after] == [n for n, *_ in before]
    for (name, t, _), (_, t0, v0) in zip(after, before):
        assert t is t0 and torch.equal(t, v0), name  # same objects, same values
    assert int(model.bn.num_batches_tracked) == 0
    # the graph is the one of the model itself: same module paths, parameter names and roles
    reference = Normed().train(mode == "train" if mode != "same" else start == "train")
    reference.load_state_dict(model.state_dict())
    with torch.no_grad(), tv.Recorder(reference) as rec:
        reference(torch.randn(8, 4))
    assert graph.graph.to_dict() == rec.graph.graph.to_dict()


def test_a_thread_training_the_model_never_sees_the_flags_flipped() -> None:
    model = Normed().train()
    inside, checked = threading.Event(), threading.Event()
    seen: list[bool] = []

    def pause(module: nn.Module, args: Any, out: Any) -> None:  # runs inside the recorded forward
        seen.append(module.training)  # the copy being recorded: in eval mode
        inside.set()
        assert checked.wait(10)

    model.bn.register_forward_hook(pause)
    graphs: list[tv.ComputationGraph] = []
    worker = threading.Thread(target=lambda: graphs.append(tv.draw_graph(model, input_size=(2, 4), mode="eval")))
    worker.start()
    try:
        assert inside.wait(10)
        during = [m.training for m in model.modules()]  # what a training thread would see now
    finally:
        checked.set()
        worker.join(10)
    assert during == [True] * len(during) and seen == [False]
    assert [m.path for m in graphs[0].graph.modules()] == ["", "fc", "bn", "head", "head.0", "head.1"]


def test_the_copy_shares_parameters_and_records_plain_list_modules_as_copies() -> None:
    class Listed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norms = nn.ModuleList([nn.BatchNorm1d(4)])
            self.plain = [self.norms[0]]  # the same module, also in a plain list

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.plain[0](x)

    model = Listed().train()
    stats = model.norms[0].running_mean.clone()
    graph = tv.draw_graph(model, input_data=torch.randn(8, 4) + 5, mode="train")
    assert torch.equal(model.norms[0].running_mean, stats)  # the copy ran, also through the list
    assert [m.path for m in graph.graph.modules()] == ["", "norms.0"]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_a_torchscript_submodule_on_meta_says_the_cause_and_what_to_do_first() -> None:
    """The TorchScript interpreter's 50-line error had the cause on line 11 (issue 21 C4)."""

    class Scripted(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.jit.script(nn.Linear(4, 4))
            self.b = nn.ReLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x))

    with pytest.raises(RuntimeError) as info:
        tv.draw_graph(Scripted(), input_size=(2, 4), device="meta")
    err: Any = info.value
    lines = str(err).splitlines()
    assert lines[0].startswith("forward raised in module 'a' (RecursiveScriptModule)")
    assert lines[0].endswith("RuntimeError: Tensor on device cpu is not on the expected device meta!")
    assert lines[1].startswith("module 'a' is a TorchScript module") and "device='cpu'" in lines[1]
    assert err.hint == lines[1] and lines[3] == "the whole error:"
    assert "The following operation failed in the TorchScript interpreter." in lines[4]
    # what the hint says works
    graph = tv.draw_graph(Scripted(), input_size=(2, 4), device="cpu")
    assert [m.path for m in graph.graph.modules()] == ["", "a", "b"]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_a_scripted_model_on_meta_gets_the_same_hint() -> None:
    """The whole model scripted: the hint looked it up with ``get_submodule``, which a
    ScriptModule does not support, and the explanation itself raised a RuntimeError."""
    model = torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval())
    with pytest.raises(tv.RecordingError) as info:
        tv.draw_graph(model, input_size=(2, 4), device="meta")
    assert str(info.value).startswith("forward raised in the root module (RecursiveScriptModule)")
    assert info.value.hint.startswith("the model is a TorchScript module") and "device='cpu'" in info.value.hint
    assert [n.op for n in tv.draw_graph(model, input_size=(2, 4)).graph.functions()] == ["forward"]

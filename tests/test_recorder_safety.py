"""The user's model and the process are left as found: patches undone, errors useful,
other threads undisturbed."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest
import torch
from torch import nn

from tensorview import Recorder
from tensorview.errors import RecordingError, TensorviewError
from tensorview.recording import is_patched

from .fixtures import models as zoo


def mode_stack_depth() -> int:
    return torch._C._len_torch_function_stack()


def test_error_names_module_chains_cause_and_keeps_partial_graph() -> None:
    model = zoo.Raises()
    original_call = nn.Module.__call__
    with pytest.raises(RecordingError, match=r"module 'second\.1' \(Linear\), op 'linear_1'") as info:
        with Recorder(model):
            model(zoo.x4())
    err = info.value
    assert err.module_path == "second.1"
    assert isinstance(err.__cause__, RuntimeError) and "mat1 and mat2" in str(err.__cause__)
    g = err.graph.graph
    failed = [n.path for n in g.nodes if getattr(n, "failed", False)]
    assert failed == ["", "second", "second.1", "second.1"]  # root, second, second.1, its linear
    assert [m.path for m in g.modules()] == ["", "first", "second", "second.0", "second.1"]
    assert g.error is not None and "mat1 and mat2" in g.error
    g.lint()
    assert nn.Module.__call__ is original_call and not is_patched() and mode_stack_depth() == 0


def test_error_keeps_the_original_exception_type_catchable() -> None:
    class Picky(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("no thanks")

    with pytest.raises(ValueError, match="no thanks") as info, Recorder(Picky()) as rec:
        rec.model(zoo.x4())
    assert isinstance(info.value, RecordingError)


def test_keyboard_interrupt_passes_through_and_everything_is_undone() -> None:
    class Interrupted(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.fc(x)
            raise KeyboardInterrupt

    model = Interrupted()
    with pytest.raises(KeyboardInterrupt), Recorder(model):
        model(zoo.x4())
    assert not is_patched() and mode_stack_depth() == 0 and gc.isenabled()
    y = model.fc(zoo.x4())  # the model still works, plainly
    assert type(y) is torch.Tensor


def test_recorders_do_not_nest_and_bad_model_is_named() -> None:
    model = zoo.Shared()
    with Recorder(model), pytest.raises(TensorviewError, match="do not nest"), Recorder(model):
        pass
    assert not is_patched()
    with pytest.raises(TypeError, match="needs a torch.nn.Module, got str"):
        Recorder("resnet")  # type: ignore[arg-type]


def test_nothing_recorded_is_a_clear_error() -> None:
    with Recorder(zoo.Shared()) as rec:
        pass
    with pytest.raises(TensorviewError, match="nothing was recorded"):
        rec.graph


def test_other_thread_is_neither_recorded_nor_disturbed() -> None:
    barrier = threading.Barrier(2, timeout=10)

    class Meeting(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            barrier.wait()  # both threads are inside forward at the same time
            y = self.fc(x)
            barrier.wait()
            return y.relu()

    model = Meeting()
    x = zoo.x4()
    expected = model.fc(x).relu()
    results: dict[str, Any] = {}

    def plain() -> None:
        results["plain"] = model(x)

    t = threading.Thread(target=plain)
    t.start()
    with Recorder(model) as rec:
        out = model(x)
    t.join()
    g = rec._session.graph
    assert [m.path for m in g.modules()] == ["", "fc"]
    assert [n.op for n in g.functions()] == ["linear", "relu"]
    assert type(results["plain"]) is torch.Tensor and torch.equal(results["plain"], expected)
    assert torch.equal(out, expected)
    assert not is_patched()


def test_foreign_patch_of_module_call_is_not_clobbered() -> None:
    model = zoo.Shared()
    original = nn.Module.__call__
    seen: list[str] = []
    try:
        with pytest.warns(RuntimeWarning, match="replaced by someone else"), Recorder(model):
            ours = nn.Module.__call__

            def other_tool(self: nn.Module, *a: Any, **k: Any) -> Any:
                seen.append(type(self).__name__)
                return ours(self, *a, **k)

            nn.Module.__call__ = other_tool  # another tool patches after us
        assert nn.Module.__call__ is other_tool  # their patch stays
        out = model(zoo.x4())  # our leftover wrapper in their chain is inert
        assert type(out) is torch.Tensor and seen[0] == "Shared"
    finally:
        nn.Module.__call__ = original


def test_the_module_call_wrapper_is_made_once_and_a_stale_one_stays_inert() -> None:
    """Recordings in a row install the same wrapper (made again only for another original
    or once Dynamo is loaded); one left in another tool's chain never records a call twice."""
    model = zoo.Shared()
    original = nn.Module.__call__
    with Recorder(model) as plain:
        first = nn.Module.__call__
        model(zoo.x4())
    with Recorder(model):
        assert nn.Module.__call__ is first
    calls = [n.path for n in plain.ir.modules()]
    seen: list[str] = []

    def other_tool(self: nn.Module, *a: Any, **k: Any) -> Any:  # a chain holding our old wrapper
        seen.append(type(self).__name__)
        return first(self, *a, **k)

    try:
        nn.Module.__call__ = other_tool
        with Recorder(model) as rec:
            installed = nn.Module.__call__
            model(zoo.x4())
        assert installed is not first and installed.__wrapped__ is other_tool
        assert [n.path for n in rec.ir.modules()] == calls and seen  # each call once, through their patch
        assert nn.Module.__call__ is other_tool
    finally:
        nn.Module.__call__ = original


def test_an_error_caught_inside_forward_is_not_a_recording_error() -> None:
    class Fallback(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fast = nn.Linear(5, 4)  # wrong size: raises
            self.slow = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            try:
                return self.fast(x)
            except RuntimeError:
                return self.slow(x)

    model = Fallback()
    with Recorder(model) as rec:
        out = model(zoo.x4())
    assert out.shape == (2, 4)
    g = rec._session.graph
    assert g.error is None
    assert [m.path for m in g.modules() if m.failed] == ["fast"]  # it did fail, and is shown so
    assert g.nodes[g.outputs[0]].path == "slow"
    rec.graph  # drawable


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("fails", [False, True])
def test_cycle_collection_is_off_while_recording_and_restored_after(enabled: bool, fails: bool) -> None:
    seen: list[bool] = []

    class Net(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(gc.isenabled())
            if fails:
                raise ValueError("boom")
            return x + 1

    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        net = Net()
        if fails:
            with pytest.raises(RecordingError), Recorder(net):
                net(torch.zeros(2))
        else:
            with Recorder(net):
                net(torch.zeros(2))
        assert seen == [False]  # off inside the forward
        assert gc.isenabled() is enabled  # as it was before, also after a failure
    finally:
        gc.enable() if was else gc.disable()


class Reassigns(nn.Module):
    """A forward that stores what no-op ops and calls return, as CTRL does with its
    ``pos_encoding`` buffer (``self.pos_encoding = self.pos_encoding.to(device, dtype)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("pos", torch.arange(6.0).reshape(2, 3))
        self.register_buffer("steps", torch.zeros(()))
        self.inner = nn.Identity()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.pos = self.pos.to(x.dtype)  # a no-op: the same object without us
        self.steps = self.steps + 1  # a new tensor: a new buffer without us too
        self.seen = self.inner(x)  # the caller's input, passed through a module
        self.scaled = nn.Parameter(self.w * 2)  # a parameter made in forward
        return self.pos + x, x.contiguous()


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_tensors_left_on_the_model_or_returned_are_the_callers_own(device: str) -> None:
    """No RecorderTensor is left on the model (attributes, buffers, parameters), and where
    the forward stores or returns a tensor the caller holds, unchanged, it is that very
    object, as without recording."""
    m = Reassigns().to(device)
    pos, x = m.pos, torch.randn(2, 3, device=device)
    with Recorder(m) as rec:
        out, same = m(x)
    assert m.pos is pos and same is x and m.seen is x
    assert type(m.steps) is torch.Tensor and m.steps.shape == () and type(out) is torch.Tensor
    assert type(m.scaled) is nn.Parameter and m.scaled.shape == (3,) and m.scaled.requires_grad
    assert {k for k, _ in m.named_parameters()} == {"w", "scaled"}
    assert [n.op for n in rec.graph.graph.functions()][:1] == ["to"]
    if device == "cpu":
        assert m.steps.item() == 1.0 and torch.equal(m.scaled, torch.full((3,), 2.0))


class ReturnsOneTensorTwice(nn.Module):
    """Returns its last hidden state twice and keeps it, as Sam2HieraDetModel does with
    ``last_hidden_state`` and ``intermediate_hidden_states[-1]``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        h = self.fc(x)
        self.last = h
        return {"last": h, "stages": (x * 2, h)}


def test_a_tensor_left_in_several_places_is_one_object() -> None:
    """Without recording, the tensor returned twice and stored on the model is one object;
    it must come back as one object (not a plain twin per place), and as one output."""
    m = ReturnsOneTensorTwice()
    with Recorder(m) as rec:
        out = m(torch.randn(2, 3))
    h = out["last"]
    assert type(h) is torch.Tensor and out["stages"][1] is h and m.last is h
    g = rec.graph.graph
    assert [g.nodes[i].source_name for i in g.outputs] == ["last", "stages[0]"]


def test_a_forwards_signature_is_kept_without_keeping_its_function_alive() -> None:
    """Recording reads forward's signature once per function (slow behind decorators), and
    holds it weakly: a forward made on the fly, with whatever its closure holds, is freed."""
    import gc
    import weakref

    from tensorview.recording.signatures import forward_signature

    held = torch.zeros(3)

    def make() -> nn.Module:
        class OnTheFly(nn.Module):
            def forward(self, x: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
                return x * scale + held

        return OnTheFly()

    a, b = make(), make()
    assert forward_signature(a.forward) is forward_signature(a.forward)
    assert list(forward_signature(a.forward).parameters) == ["x", "scale"]
    with Recorder(a) as rec:
        a(torch.ones(3))
    assert [rec.ir.nodes[i].name for i in rec.ir.inputs] == ["x"]
    gone = weakref.ref(type(a).forward)
    del a, rec
    gc.collect()
    assert gone() is None  # the cache kept neither the function nor its class
    assert forward_signature(b.forward).parameters["scale"].default == 2.0


def test_a_kept_recorder_does_not_keep_its_callers_locals_alive() -> None:
    """The Recorder's signal guard held the frame that opened the ``with`` block: a kept
    Recorder kept every local of a function that had returned (a large input, say)."""
    import gc
    import weakref

    model = nn.Sequential(nn.Linear(4, 4))
    held: list[Any] = []

    def record() -> Recorder:
        big = torch.zeros(1000, 4)
        held.append(weakref.ref(big))
        with Recorder(model) as rec:
            model(big[:1])
        return rec

    rec = record()
    gc.collect()
    assert held[0]() is None  # the caller's local is gone with its frame
    assert [m.path for m in rec.ir.modules()] == ["", "0"]  # and the recording is still there


@pytest.mark.parametrize("entry", ["Recorder", "draw_graph"])
def test_a_dropped_recording_is_freed_without_the_cycle_collector(entry: str) -> None:
    """The session's collaborators are connected both ways while recording; when it ends
    the links go, so a dropped recording (graph and all) is freed by reference counting
    at once, not at the next full collection (which walks the whole heap)."""
    import gc
    import weakref

    import tensorview as tv

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    try:
        if entry == "Recorder":
            with Recorder(model) as rec:
                model(torch.zeros(1, 4))
            graph = weakref.ref(rec.ir)
            assert [n.name for n in rec.ir.functions()] == ["linear", "relu"]
        else:
            rec = tv.draw_graph(model, input_size=(1, 4))
            graph = weakref.ref(rec.graph)
            assert "relu" in rec.source
        del rec
        assert graph() is None
    finally:
        if collecting:
            gc.enable()

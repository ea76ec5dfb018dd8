"""``torch.compile``d models record as their eager modules: the same graph (``to_json()``),
no op of tensorview's own recording code, nothing compiled or traced by Dynamo while
recording, and the user's compiled model untouched (its compiled cache still used)."""

from __future__ import annotations

import logging
import shutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._dynamo
from torch import nn

import tensorview as tv
from tensorview.recording.compiled import _EagerStance, original_callable

from .fixtures import needs


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x)) + x


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.block = Block()
        self.out = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.block(torch.relu(self.inp(x)))).softmax(-1)


class Counter:
    """A Dynamo backend that runs the captured graph eagerly and counts compilations."""

    def __init__(self) -> None:
        self.compiles = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        self.compiles += 1
        return gm.forward


def model() -> MLP:
    torch.manual_seed(0)
    return MLP().eval()


def x() -> torch.Tensor:
    return torch.randn(3, 4)


def frames() -> int:
    return int(torch._dynamo.utils.counters["frames"]["total"])


@pytest.fixture(autouse=True)
def _fresh_dynamo(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Each test starts with empty Dynamo caches; Dynamo may log no warning (the old
    recorder made it hit its recompile limit on tensorview's own functions)."""
    torch._dynamo.reset()
    with caplog.at_level(logging.WARNING, logger="torch._dynamo"):
        yield
    dynamo_logs = [r.getMessage() for r in caplog.records if r.name.startswith("torch._dynamo")]
    assert dynamo_logs == []
    assert torch._dynamo.eval_frame._stance.stance == "default"  # the stance is put back
    torch._dynamo.reset()


def json_of(m: nn.Module, **kw: Any) -> dict[str, Any]:
    torch.manual_seed(1)
    return tv.draw_graph(m, input_data=x(), **kw).to_json()


def paths(g: Any) -> list[str]:
    return [m.path for m in g.graph.modules()]


EAGER = json_of(model())


def test_compiled_module_records_the_eager_graph() -> None:
    m = model()
    compiled = torch.compile(m, backend="eager")
    before = frames()
    got = json_of(compiled)
    assert frames() == before  # Dynamo compiled nothing: no frame of ours or the model's
    assert got == json_of(m) == EAGER
    g = tv.draw_graph(compiled, input_data=x())
    assert paths(g) == ["", "inp", "block", "block.fc", "block.act", "out"]
    assert [f.op for f in g.graph.functions()] == ["linear", "relu", "linear", "relu", "add", "linear", "softmax"]
    # the caller's model is untouched: still the same compiled wrapper around the same module
    assert isinstance(compiled, torch._dynamo.eval_frame.OptimizedModule) and compiled._orig_mod is m


def test_recorder_on_a_compiled_module() -> None:
    m = model()
    compiled = torch.compile(m, backend="eager")
    inp = x()
    with tv.Recorder(compiled) as rec:
        out = compiled(inp)
    assert type(out) is torch.Tensor and torch.equal(out, m(inp))
    with tv.Recorder(m) as rec_eager:
        m(inp)
    assert rec.graph.to_json() == rec_eager.graph.to_json()


def test_compiled_submodules_keep_their_paths() -> None:
    m = model()
    m.block = torch.compile(m.block, backend="eager")  # a compiled submodule
    m.out = torch.compile(m.out, backend="eager")
    got = json_of(m)
    assert got == EAGER
    text = str(got)
    assert "_orig_mod" not in text and "OptimizedModule" not in text
    params = {n["source_name"] for n in got["nodes"] if n.get("role") == "parameter"}
    assert "block.fc.weight" in params


def test_compiled_forward_function_and_method() -> None:
    m = model()
    m.forward = torch.compile(m.forward, backend="eager")  # type: ignore[method-assign]
    m.block.forward = torch.compile(m.block.forward, backend="eager")  # type: ignore[method-assign]
    before = frames()
    assert json_of(m) == EAGER
    assert frames() == before


class DecoratedMLP(MLP):
    @torch.compile(backend="eager")
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x)


def test_forward_compiled_in_the_class_and_in_place() -> None:
    torch.manual_seed(0)
    decorated = DecoratedMLP().eval()
    got = json_of(decorated)
    assert [n["class"] for n in got["nodes"] if n["kind"] == "module"][0] == "DecoratedMLP"
    assert got["edges"] == EAGER["edges"]
    m = model()
    m.compile(backend="eager")  # nn.Module.compile: compiled in place
    assert json_of(m) == EAGER


def test_compiled_helper_called_in_forward() -> None:
    counter = Counter()

    class UsesHelper(MLP):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return helper(super().forward(x))

    def gelu_twice(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(torch.nn.functional.gelu(t))

    torch.manual_seed(0)
    helper = gelu_twice
    eager = json_of(UsesHelper().eval())
    helper = torch.compile(gelu_twice, backend=counter)
    torch.manual_seed(0)
    assert json_of(UsesHelper().eval()) == eager
    assert counter.compiles == 0
    assert [n["op"] for n in eager["nodes"] if n["kind"] == "function"][-2:] == ["gelu", "gelu"]


def test_the_compiled_cache_still_works_afterwards() -> None:
    counter = Counter()
    m = model()
    compiled = torch.compile(m, backend=counter)
    inp = x()
    first = compiled(inp)
    assert counter.compiles == 1
    g = tv.draw_graph(compiled, input_data=inp)
    assert counter.compiles == 1  # recording ran eagerly, compiled nothing
    assert len(list(g.graph.functions())) == 7
    with torch.compiler.set_stance("fail_on_recompile"):  # the cached code is still valid
        again = compiled(inp)
    assert torch.equal(first, again)
    assert counter.compiles == 1


def test_compiled_model_on_meta() -> None:
    """draw_graph(device="meta") records a copy: the copy's compiled forward must run the
    copy, not the caller's model (a compiled bound method is a function deepcopy shares)."""
    m = model()
    m.forward = torch.compile(m.forward, backend="eager")  # type: ignore[method-assign]
    m.block = torch.compile(m.block, backend="eager")
    g = tv.draw_graph(m, input_size=(3, 4), device="meta", source=False)  # the calls' lines differ
    torch.manual_seed(0)
    eager = tv.draw_graph(MLP().eval(), input_size=(3, 4), device="meta", source=False)
    assert g.to_json() == eager.to_json()
    assert {t.device for t in g.graph.tensors()} == {"meta"}
    assert all(p.device.type == "cpu" for p in m.parameters())
    assert original_callable(m.forward).__self__ is m  # the caller's method is untouched


def test_recording_inside_a_compiled_caller() -> None:
    """A compiled function calling the model inside a Recorder block: Dynamo graph-breaks
    into tensorview's module-call wrapper and never traces it; the graph is the eager one."""
    counter = Counter()
    m = model()

    @torch.compile(backend=counter)
    def run(mod: nn.Module, t: torch.Tensor) -> torch.Tensor:
        return mod(t) * 2

    inp = x()
    # no_grad: Dynamo itself reads `.grad` of a non-leaf result at a graph break, a warning
    with torch.no_grad(), tv.Recorder(m) as rec:
        out = run(m, inp)
    with torch.no_grad(), tv.Recorder(m) as rec_eager:
        m(inp)
    assert rec.graph.to_json() == rec_eager.graph.to_json()
    assert torch.allclose(out, m(inp) * 2)


def test_the_module_call_wrapper_is_set_once_and_never_swapped() -> None:
    """The patched ``nn.Module.__call__`` is set when recording starts and put back when it
    ends, also on errors; never swapped in between (setting a dunder of ``nn.Module``
    updates every subclass's slot).  Run eagerly it is not behind ``torch._dynamo.disable``
    (a microsecond a module call); its twin that is, for Dynamo to graph-break into, is
    what a compiled caller reaches (``test_recording_inside_a_compiled_caller``)."""
    seen: list[Any] = []

    class Probe(nn.Module):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            seen.append(nn.Module.__call__)
            if t.shape[0] == 0:
                raise ValueError("empty")
            return t + 1

    m = nn.Sequential(Probe())
    original = nn.Module.__call__
    with tv.Recorder(m):
        installed = nn.Module.__call__
        m(torch.randn(2, 3))
        assert nn.Module.__call__ is installed
    assert seen == [installed] and nn.Module.__call__ is original
    assert not getattr(installed, "_torchdynamo_disable", False)
    assert getattr(installed.__tv_guarded__, "_torchdynamo_disable", False)  # Dynamo is loaded here
    with pytest.raises(ValueError, match="empty"), tv.Recorder(m):
        installed = nn.Module.__call__
        try:
            m(torch.randn(0, 3))
        finally:
            assert nn.Module.__call__ is installed
    assert seen[1] is installed and nn.Module.__call__ is original


def _cxx_compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


@pytest.fixture
def inductor() -> None:
    """Import inductor first: its import warns (torch.jit.script_method deprecation in
    torch.utils.mkldnn), which is torch's noise, not the recording's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch._inductor.compile_fx  # noqa: F401


@pytest.mark.usefixtures("inductor")
def test_inductor_compiled_model_records_without_compiling() -> None:
    """The default backend (inductor): recording works and triggers no compilation."""
    m = model()
    compiled = torch.compile(m)
    before = frames()
    assert json_of(compiled) == EAGER
    m2 = model()
    m2.block = torch.compile(m2.block)
    assert json_of(m2) == EAGER
    assert frames() == before


@pytest.mark.usefixtures("inductor")
@pytest.mark.skipif(_cxx_compiler() is None, reason=needs.CXX)
def test_inductor_cache_survives_a_recording() -> None:
    """Compile with inductor (real C++ code), record, call again: no recompilation."""
    torch.manual_seed(0)
    lin = nn.Linear(4, 2).eval()
    compiled = torch.compile(lin)
    inp = torch.randn(2, 4)
    with torch.no_grad():
        first = compiled(inp)
        compiled_frames = frames()
        g = tv.draw_graph(compiled, input_data=inp)
        assert frames() == compiled_frames
        with torch.compiler.set_stance("fail_on_recompile"):
            again = compiled(inp)
    assert [f.op for f in g.graph.functions()] == ["linear"]
    assert torch.allclose(first, again) and torch.allclose(first, lin(inp), atol=1e-6)


def test_compiled_model_in_training_mode_records_on_its_copy() -> None:
    """draw_graph(mode="eval") of a model in training mode runs a copy of the module tree:
    a compiled method stored on a module must run the copy (eval), not the caller's model."""
    m = model().train()
    m.forward = torch.compile(m.forward, backend="eager")  # type: ignore[method-assign]
    m.block.compile(backend="eager")
    got = json_of(m)
    assert got == EAGER
    assert all(mod.training for mod in m.modules())  # the caller's flags are untouched


def test_dynamo_imported_by_the_forward_sets_the_eager_stance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recording that starts before Dynamo is loaded must set the eager stance as soon as
    the forward imports it (a torch.compile inside forward; torch.cond compiles its
    branches): traced, Dynamo recorded dozens of ``_is_view``/``is_conj`` ops of our op
    handler, or made torch.cond fail.  Dynamo is loaded in this process, so the watch is
    tried on a stand-in package; tensorview's own stance object watches torch._dynamo."""
    (tmp_path / "tv_standin_dynamo").mkdir()
    (tmp_path / "tv_standin_dynamo" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    stance = _EagerStance(package="tv_standin_dynamo", ready="tv_standin_dynamo")
    finders = list(sys.meta_path)
    holder = object()
    stance.acquire(holder)
    assert not stance.eager and torch._dynamo.eval_frame._stance.stance == "default"
    import tv_standin_dynamo  # noqa: F401 - what the forward would do

    assert stance.eager and torch._dynamo.eval_frame._stance.stance == "force_eager"
    assert sys.meta_path == finders  # the watch is gone once it saw the import
    stance.release(holder)
    assert not stance.eager and torch._dynamo.eval_frame._stance.stance == "default"
    # a recording that ends before the import leaves no watch behind, and sets nothing
    monkeypatch.delitem(sys.modules, "tv_standin_dynamo")
    stance.acquire(holder)
    stance.release(holder)
    assert sys.meta_path == finders
    import tv_standin_dynamo  # noqa: F401, F811

    assert not stance.eager and torch._dynamo.eval_frame._stance.stance == "default"


def test_the_eager_stance_released_twice_by_one_holder_is_released_once() -> None:
    """A clean-up step retried after an interrupt landed between ``release`` and its
    bookkeeping releases again: that must not take another recording's hold away (a count
    went to -1 and left Dynamo's guard on every module call of the next recordings)."""
    stance = _EagerStance()
    first, second = object(), object()
    stance.acquire(first)
    stance.acquire(second)
    assert stance.eager and torch._dynamo.eval_frame._stance.stance == "force_eager"
    stance.release(first)
    stance.release(first)  # retried: nothing more
    assert stance.eager and torch._dynamo.eval_frame._stance.stance == "force_eager"
    stance.release(second)
    assert not stance.eager and torch._dynamo.eval_frame._stance.stance == "default"
    stance.acquire(first)  # a new recording sets it again
    assert stance.eager
    stance.release(first)
    assert not stance.eager and torch._dynamo.eval_frame._stance.stance == "default"

"""Source locations (recording/source.py): the line of the user's code behind every op and
module call, as the annotation layer "source"."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.recording import Recorder, SourceProbe
from tensorview.recording.source import shorten_path

from .fixtures import needs
from .fixtures.hf import written_for

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)

HERE = os.path.relpath(__file__)


def line_of(obj: object, marker: str) -> int:
    lines, start = inspect.getsourcelines(obj)  # type: ignore[arg-type]
    return start + next(i for i, text in enumerate(lines) if marker in text)


class Two(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)  # <fc>
        a = y + 1  # <first add>
        b = y + 1  # <second add>
        return torch.relu(a) * b  # <relu>


def sources(graph: tv.ComputationGraph) -> dict[str, str]:
    layer = graph.graph.annotations.layer("source")
    return {graph.graph[i].name: v for i, v in layer.items()}


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_every_op_and_call_points_at_the_users_line(device: str) -> None:
    graph = tv.draw_graph(Two(), input_size=(2, 4), device=device)  # <draw>
    src = sources(graph)
    at = lambda marker: f"{HERE}:{line_of(Two, marker)}"  # noqa: E731
    assert src["fc"] == src["linear"] == at("<fc>")  # the op inside Linear.forward: the line that called fc
    # the second add is replayed on meta (same op, same shapes) and still gets its own line
    assert src["add"] == at("<first add>") and src["add_1"] == at("<second add>")
    assert src["relu"] == src["mul"] == at("<relu>")
    draw_line = line_of(test_every_op_and_call_points_at_the_users_line, "<draw>")
    assert src["model"] == f"{HERE}:{draw_line}"  # the root call: where draw_graph was called
    nodes = graph.graph
    assert set(nodes.annotations.layer("source")) == {n.id for n in nodes if not isinstance(n, tv.TensorNode)}


def test_source_off_and_recorders_without_the_probe_record_nothing() -> None:
    assert "source" not in tv.draw_graph(Two(), input_size=(2, 4), source=False).graph.annotations
    model = Two()
    with torch.no_grad(), Recorder(model) as rec:
        model(torch.randn(2, 4))
    assert rec.graph.annotations.names() == []
    with pytest.raises(tv.InvalidTypeError, match="source must be True or False, got 'yes'"):
        tv.draw_graph(model, input_size=(2, 4), source="yes")  # type: ignore[arg-type]


def test_source_stays_out_of_graphviz_labels_and_in_the_json() -> None:
    on = tv.draw_graph(Two(), input_size=(2, 4))
    off = tv.draw_graph(Two(), input_size=(2, 4), source=False)
    assert on.source == off.source
    notes = {n["name"]: n.get("notes", {}) for n in on.to_json()["nodes"]}
    assert notes["relu"]["source"] == f"{HERE}:{line_of(Two, '<relu>')}"


class Forwarding(nn.Linear):
    """A ``__call__`` that only hands the call on (as transformers 4's checkpointing layers)."""

    def __call__(self, *args: object, **kwargs: object) -> torch.Tensor:
        return super().__call__(*args, **kwargs)  # type: ignore[no-any-return]


class CallsForwarding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Forwarding(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)  # <inner>


def test_a_call_handed_on_by_a_dunder_call_points_at_its_caller() -> None:
    src = sources(tv.draw_graph(CallsForwarding(), input_size=(2, 4)))
    assert src["inner"] == src["linear"] == f"{HERE}:{line_of(CallsForwarding, '<inner>')}"


def test_a_transformers_layer_points_at_the_line_that_called_it() -> None:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    from .fixtures.cost_models import tiny_llama_config

    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(tiny_llama_config())
    graph = tv.draw_graph(model, input_data={"input_ids": torch.zeros(1, 8, dtype=torch.long)}, device="meta")
    src = sources(graph)
    forward = inspect.getsource(transformers.models.llama.modeling_llama.LlamaModel.forward)
    # decoder layers subclass GradientCheckpointingLayer, whose __call__ only forwards the call
    where, line = src["model_layers_1"].rsplit(":", 1)
    assert where == "transformers/models/llama/modeling_llama.py" and src["model_layers_0"] == src["model_layers_1"]
    text = Path(transformers.models.llama.modeling_llama.__file__).read_text().splitlines()[int(line) - 1]
    assert "decoder_layer(" in text and "decoder_layer(" in forward
    assert src["model_layers_0_self_attn_q_proj"].startswith("transformers/models/llama/modeling_llama.py:")


def test_paths_are_shortened() -> None:
    assert shorten_path(os.path.join(os.getcwd(), "pkg", "m.py")) == os.path.join("pkg", "m.py")
    assert shorten_path("/usr/lib/python3/dist-packages/transformers/x.py") == "transformers/x.py"
    assert shorten_path("/opt/other/site-packages/a/b.py") == "a/b.py"
    assert shorten_path("<stdin>") == "<stdin>"
    assert SourceProbe().name == "source"

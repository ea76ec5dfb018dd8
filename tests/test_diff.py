"""``tv.diff`` on pairs built for the purpose: known edits injected into a tiny transformer
(tests/fixtures/diff_models.py) and into transformers models built offline from tiny
configs must be reported exactly, nothing else; the same architecture built differently
(renamed, built in another order, another seed, meta vs CPU, saved and loaded) must be
identical or differ only by renames."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.compare import GraphDiff, fingerprint

from .fixtures import needs
from .fixtures.diff_models import IDS, Spec, Stack, Tiny
from .fixtures.hf import written_for

pytestmark = [written_for]  # transformers models built from tiny configs, their module paths

S = Spec()
ONE, BOTH = frozenset({1}), frozenset({0, 1})


def edits(d: GraphDiff) -> dict[str, Any]:
    return {
        "added": d.added,
        "removed": d.removed,
        "renamed": d.renamed,
        "changed": {c.a: sorted(c.kinds) for c in d.changed},
    }


def expect(
    added: list[str] | None = None,
    removed: list[str] | None = None,
    renamed: list[tuple[str, str]] | None = None,
    changed: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    return {"added": added or [], "removed": removed or [], "renamed": renamed or [], "changed": changed or {}}


# -- injected edits in the tiny transformer ---------------------------------------------
TINY_EDITS: dict[str, tuple[Spec, dict[str, Any]]] = {
    "one layer's activation": (S.but(other_act_in=ONE), expect(changed={"layers.1.mlp.act": ["class", "ops"]})),
    "every activation": (
        S.but(other_act_in=BOTH),
        expect(changed={f"layers.{i}.mlp.act": ["class", "ops"] for i in (0, 1)}),
    ),
    "a norm added in one layer": (S.but(q_norm_in=ONE), expect(added=["layers.1.attn.q_norm"])),
    "a norm added in every layer": (
        S.but(q_norm_in=BOTH),
        expect(added=["layers.0.attn.q_norm", "layers.1.attn.q_norm"]),
    ),
    "heads": (S.but(heads=2), expect(changed={f"layers.{i}.attn": ["ops"] for i in (0, 1)})),
    "a residual removed": (S.but(no_residual_in=frozenset({0})), expect(changed={"layers.0": ["ops"]})),
    "a module renamed": (
        S.but(attn_name="self_attn"),
        expect(renamed=[(f"layers.{i}.attn", f"layers.{i}.self_attn") for i in (0, 1)]),
    ),
    "the layer list renamed": (S.but(layers_name="h"), expect(renamed=[(f"layers.{i}", f"h.{i}") for i in (0, 1)])),
    "sublayers reordered": (S.but(mlp_first_in=ONE), expect(changed={"layers.1": ["order"]})),
    "a layer added": (S.but(layers=3), expect(added=["layers.2"])),
    "a dropout added": (S.but(dropout_in=ONE), expect(added=["layers.1.drop"])),
    "mlp width": (
        S.but(hidden=48),
        expect(
            changed={
                **{f"layers.{i}.mlp.up": ["ops", "params", "shape"] for i in (0, 1)},
                **{f"layers.{i}.mlp.act": ["ops", "shape"] for i in (0, 1)},
                **{f"layers.{i}.mlp.down": ["ops", "params", "shape"] for i in (0, 1)},
            }
        ),
    ),
    "a bias dropped": (S.but(o_bias=False), expect(changed={f"layers.{i}.attn.o_proj": ["params"] for i in (0, 1)})),
    "the final norm's class": (
        S.but(final_norm=nn.RMSNorm),
        expect(changed={"norm": ["class", "ops", "params"]}),
    ),
    "an op added": (S.but(scaled_in=frozenset({0})), expect(changed={"layers.0.attn": ["ops"]})),
    "every residual removed": (
        S.but(no_residual_in=BOTH),
        expect(changed={f"layers.{i}": ["ops"] for i in (0, 1)}),
    ),
    "two edits in two layers": (
        S.but(q_norm_in=frozenset({0}), other_act_in=ONE),
        expect(added=["layers.0.attn.q_norm"], changed={"layers.1.mlp.act": ["class", "ops"]}),
    ),
    "a rename and a norm added": (
        S.but(layers_name="h", q_norm_in=ONE),
        expect(added=["h.1.attn.q_norm"], renamed=[(f"layers.{i}", f"h.{i}") for i in (0, 1)]),
    ),
}


@pytest.mark.parametrize("name", list(TINY_EDITS))
def test_an_injected_edit_is_reported_exactly(name: str) -> None:
    spec, expected = TINY_EDITS[name]
    d = tv.diff(Tiny(S), Tiny(spec), input_data=IDS)
    assert edits(d) == expected, str(d)
    assert not d.identical and d.same_structure == (not (d.added or d.removed or d.changed))


@pytest.mark.parametrize("name", list(TINY_EDITS))
def test_the_reverse_edit_is_reported_the_other_way(name: str) -> None:
    spec, expected = TINY_EDITS[name]
    d = tv.diff(Tiny(spec), Tiny(S), input_data=IDS)
    assert sorted(d.added) == sorted(expected["removed"]) and sorted(d.removed) == sorted(expected["added"])
    assert sorted(d.renamed) == sorted((b, a) for a, b in expected["renamed"])
    assert sorted(c.b for c in d.changed) == sorted(expected["changed"])


def test_a_removed_residual_is_the_add_whose_input_is_gone_at_op_level() -> None:
    d = tv.diff(Tiny(S), Tiny(S.but(no_residual_in=frozenset({0}))), input_data=IDS, level="op")
    (change,) = d.changed
    assert [(x.kind, x.detail) for x in change.differences] == [("ops", "removes add (1, 8, 32)")]


def test_changed_heads_name_the_shapes_at_op_level() -> None:
    d = tv.diff(Tiny(S), Tiny(S.but(heads=2)), input_data=IDS, level="op")
    details = [x.detail for x in d.changed[0].differences]
    assert "view (1, 8, 32) => (1, 8, 4, 8) float32 -> (1, 8, 32) => (1, 8, 2, 16) float32" in details
    assert {x.kind for x in d.changed[0].differences} == {"ops"}


def test_a_sequential_reordered_is_a_move() -> None:
    d = tv.diff(Stack("lrn"), Stack("lnr"), input_size=(2, 8))
    assert edits(d) == expect(renamed=[("body.1", "body.2"), ("body.2", "body.1")], changed={"body": ["order"]})
    assert d.changed[0].differences[0].detail == "moved: 1 (ReLU)"


# -- injected edits in transformers models built from tiny configs ----------------------
TINY_LLAMA = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
TOKENS = {"input_ids": torch.ones(1, 8, dtype=torch.long), "use_cache": False}


def llama(**changes: Any) -> nn.Module:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**{**TINY_LLAMA, **changes})).eval()


def one_act_swapped() -> nn.Module:
    m = llama()
    m.model.layers[1].mlp.act_fn = nn.GELU()
    return m


def one_mlp_wider() -> nn.Module:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    m = llama()
    cfg = transformers.LlamaConfig(**{**TINY_LLAMA, "intermediate_size": 96})
    m.model.layers[0].mlp = type(m.model.layers[0].mlp)(cfg)
    return m


def one_norm_added() -> nn.Module:
    m = llama()
    attn = m.model.layers[0].self_attn
    attn.q_proj = nn.Sequential(attn.q_proj, nn.RMSNorm(32))  # q_proj -> q_proj.0, q_proj.1 added
    return m


HF_EDITS: dict[str, tuple[Callable[[], nn.Module], dict[str, Any]]] = {
    "llama: one layer's activation": (
        one_act_swapped,
        expect(changed={"model.layers.1.mlp.act_fn": ["class", "ops"]}),
    ),
    "llama: one layer's mlp width": (
        one_mlp_wider,
        expect(
            changed={
                "model.layers.0.mlp.gate_proj": ["ops", "params", "shape"],
                "model.layers.0.mlp.up_proj": ["ops", "params", "shape"],
                "model.layers.0.mlp.act_fn": ["ops", "shape"],
                "model.layers.0.mlp.down_proj": ["ops", "params", "shape"],
                "model.layers.0.mlp": ["ops"],
            }
        ),
    ),
    "llama: a layer added": (lambda: llama(num_hidden_layers=3), expect(added=["model.layers.2"])),
    "llama: attention bias": (
        lambda: llama(attention_bias=True),
        expect(
            changed={f"model.layers.{i}.self_attn.{p}_proj": ["params"] for i in (0, 1) for p in ("q", "k", "v", "o")}
        ),
    ),
    "llama: a norm wrapped around q_proj": (
        one_norm_added,
        expect(
            added=["model.layers.0.self_attn.q_proj.1"],
            changed={"model.layers.0.self_attn.q_proj": ["wrap"]},
        ),
    ),
}


@pytest.fixture(scope="module")
def base_llama() -> Any:
    return tv.draw_graph(llama(), input_data=TOKENS, device="meta", source=False)


@pytest.mark.parametrize("name", list(HF_EDITS))
def test_an_edit_injected_in_a_transformers_model_is_reported_exactly(name: str, base_llama: Any) -> None:
    make, expected = HF_EDITS[name]
    d = tv.diff(base_llama, make(), input_data=TOKENS)
    assert edits(d) == expected, str(d)


# -- the same architecture built differently ---------------------------------------------
class Plain(nn.Module):
    """Tiny's default network written out by hand (other construction code, same modules)."""

    def __init__(self) -> None:
        super().__init__()
        ref = Tiny(S)
        for name, child in reversed(list(ref.named_children())):
            setattr(self, name, child)
        self.layers_name = "layers"

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.layers:
            x = block(x)
        return self.head(self.norm(x))


def tiny_on_cpu() -> Any:
    return tv.draw_graph(Tiny(S), input_data=IDS, device="cpu").graph


def tiny_saved(tmp_path: Any) -> str:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tv.draw_graph(Tiny(S), input_data=IDS, device="meta").graph.to_dict()))
    return str(path)


SAME: dict[str, tuple[Callable[..., Any], list[tuple[str, str]]]] = {
    "another seed": (lambda tmp: (torch.manual_seed(1), Tiny(S))[1], []),
    "built in reverse order": (lambda tmp: Tiny(S.but(reverse_build=True)), []),
    "built by other code": (lambda tmp: _renamed_class(Plain()), []),
    "recorded on the cpu": (lambda tmp: tiny_on_cpu(), []),
    "a ComputationGraph": (lambda tmp: tv.draw_graph(Tiny(S), input_data=IDS), []),
    "saved and loaded": (tiny_saved, []),
    "a deep copy in train mode": (lambda tmp: Tiny(S).train(), []),
    "an IR Graph": (lambda tmp: tv.draw_graph(Tiny(S), input_data=IDS).graph, []),
    "a layer taken from another instance": (lambda tmp: _spliced(), []),
    "torch.compile": (lambda tmp: torch.compile(Tiny(S), backend="eager"), []),
    "renamed attention": (
        lambda tmp: Tiny(S.but(attn_name="self_attn")),
        [(f"layers.{i}.attn", f"layers.{i}.self_attn") for i in (0, 1)],
    ),
    "renamed layer list": (
        lambda tmp: Tiny(S.but(layers_name="blocks")),
        [(f"layers.{i}", f"blocks.{i}") for i in (0, 1)],
    ),
    "renamed and built in reverse": (
        lambda tmp: Tiny(S.but(layers_name="h", attn_name="self_attn", reverse_build=True)),
        [(f"layers.{i}", f"h.{i}") for i in (0, 1)] + [(f"layers.{i}.attn", f"h.{i}.self_attn") for i in (0, 1)],
    ),
}


def _spliced() -> nn.Module:
    m = Tiny(S)
    m.layers[1] = Tiny(S.but(reverse_build=True)).layers[0]  # type: ignore[index]
    return m


def _renamed_class(m: nn.Module) -> nn.Module:
    m.__class__ = type("Tiny", (Plain,), {})
    return m


@pytest.mark.parametrize("name", list(SAME))
def test_the_same_architecture_built_differently_is_identical_or_renamed(name: str, tmp_path: Any) -> None:
    make, renames = SAME[name]
    d = tv.diff(Tiny(S), make(tmp_path), input_data=IDS)
    assert d.same_structure, str(d)
    assert sorted(d.renamed) == sorted(renames), str(d)
    assert d.identical == (not renames)


HF_SAME = {
    "llama": ("LlamaForCausalLM", "LlamaConfig", TINY_LLAMA),
    "mistral": ("MistralForCausalLM", "MistralConfig", TINY_LLAMA),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", TINY_LLAMA),
    "gpt2": ("GPT2LMHeadModel", "GPT2Config", dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    "bert": (
        "BertModel",
        "BertConfig",
        dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
    ),
}


def hf_model(name: str, seed: int = 0) -> nn.Module:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    cls, cfg, kwargs = HF_SAME[name]
    torch.manual_seed(seed)
    return getattr(transformers, cls)(getattr(transformers, cfg)(**kwargs)).eval()


HF_INPUTS = {"input_ids": torch.ones(1, 8, dtype=torch.long)}


@pytest.mark.parametrize("name", list(HF_SAME))
@pytest.mark.parametrize("how", ["another seed", "meta vs cpu", "saved and loaded"])
def test_a_transformers_model_built_twice_is_identical(name: str, how: str, tmp_path: Any) -> None:
    a = tv.draw_graph(hf_model(name), input_data=HF_INPUTS, device="meta", source=False)
    if how == "another seed":
        b: Any = hf_model(name, seed=1)
    elif how == "meta vs cpu":
        b = tv.draw_graph(hf_model(name, seed=1), input_data=HF_INPUTS, device="cpu", source=False)
    else:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(a.graph.to_dict()))
        b = str(path)
    d = tv.diff(a, b, input_data=HF_INPUTS)
    assert d.identical, str(d)


# -- the report, JSON, options and errors -------------------------------------------------
def test_the_report_folds_repeats_and_lists_in_data_flow_order() -> None:
    d = tv.diff(
        Tiny(S.but(layers=4)),
        Tiny(S.but(layers=4, q_norm_in=frozenset(range(4)), final_norm=nn.RMSNorm)),
        input_data=IDS,
    )
    assert str(d).splitlines() == [
        "Tiny vs Tiny (module level): 4 added, 1 changed",
        "  layers.0–3.attn: each adds q_norm (LayerNorm)",
        "  norm: class LayerNorm -> RMSNorm; params bias (32) -> absent (64 -> 32 parameters); ops 1 changed (layer_norm -> rms_norm)",
    ]
    assert str(tv.diff(Tiny(S), Tiny(S), input_data=IDS)) == "Tiny vs Tiny (module level): identical"


def test_to_dict_and_to_json_hold_every_difference() -> None:
    d = tv.diff(Tiny(S), Tiny(S.but(q_norm_in=ONE, attn_name="self_attn")), input_data=IDS)
    data = json.loads(d.to_json())
    assert data == d.to_dict()
    assert data["identical"] is False and data["same_structure"] is False
    assert data["added"] == [
        {"path": "layers.1.self_attn.q_norm", "class": "LayerNorm", "parent": "layers.1.self_attn", "calls": 1}
    ]
    assert data["renamed"] == [{"a": f"layers.{i}.attn", "b": f"layers.{i}.self_attn"} for i in (0, 1)]
    assert data["report"] == d.lines()


def test_ignore_leaves_out_kinds_of_differences() -> None:
    b = Tiny(S.but(other_act_in=ONE, attn_name="self_attn"))
    assert tv.diff(Tiny(S), b, input_data=IDS, ignore=("class", "ops", "names")).identical
    d = tv.diff(Tiny(S), b, input_data=IDS, ignore="ops,names")
    assert edits(d) == expect(changed={"layers.1.mlp.act": ["class"]})


def test_a_changed_dtype_is_a_dtype_difference_unless_ignored() -> None:
    a = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    b = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).to(torch.float64)
    d = tv.diff(tv.draw_graph(a, input_size=(1, 4)), tv.draw_graph(b, input_size=(1, 4), dtypes=[torch.float64]))
    assert {c.a: sorted(c.kinds) for c in d.changed} == {"": ["dtype"], "0": ["dtype", "ops"], "1": ["dtype", "ops"]}
    assert tv.diff(
        tv.draw_graph(a, input_size=(1, 4)), tv.draw_graph(b, input_size=(1, 4), dtypes=[torch.float64]), ignore="dtype"
    ).identical


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"level": "layer"}, tv.InvalidInputError, r"level must be one of \['module', 'op'\], got 'layer'"),
        ({"ignore": "dtypes"}, tv.InvalidInputError, r"unknown kind 'dtypes' \(allowed: class, shape, dtype"),
        ({"ignore": 3}, tv.InvalidTypeError, r"ignore must be kinds of differences"),
    ],
)
def test_bad_options_name_the_value_and_the_choices(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        tv.diff(Tiny(S), Tiny(S), input_data=IDS, **kwargs)


def test_bad_targets_are_named(tmp_path: Any) -> None:
    with pytest.raises(tv.InvalidTypeError, match=r"diff compares models .* got int: 3"):
        tv.diff(3, Tiny(S), input_data=IDS)
    with pytest.raises(tv.InvalidInputError, match=r"no such graph JSON: '.*nope.json'"):
        tv.diff(str(tmp_path / "nope.json"), Tiny(S), input_data=IDS)
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    with pytest.raises(tv.InvalidInputError, match="not a tensorview graph JSON"):
        tv.diff(str(bad), Tiny(S), input_data=IDS)


def test_a_saved_graph_loads_back_equal() -> None:
    from tensorview.graph import from_dict

    g = tv.draw_graph(Tiny(S), input_data=IDS, stats=("params",)).graph
    back = from_dict(json.loads(json.dumps(g.to_dict())))
    assert back.to_dict() == g.to_dict()


def test_the_fingerprint_pins_the_architecture() -> None:
    same = {
        fingerprint(Tiny(S), input_data=IDS),
        fingerprint(tiny_on_cpu()),
        fingerprint(Tiny(S.but(reverse_build=True)), input_data=IDS),
    }
    assert len(same) == 1 and len(same.pop()) == 16
    others = {fingerprint(Tiny(spec), input_data=IDS) for spec, _ in TINY_EDITS.values()}
    assert len(others) == len(TINY_EDITS) and fingerprint(Tiny(S), input_data=IDS) not in others


# -- the common comparisons ------------------------------------------------------
class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class LoRA(nn.Module):
    def __init__(self, base: nn.Linear, r: int = 4) -> None:
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base_layer(x) + self.lora_B(self.lora_A(x))


X = torch.randn(2, 16)


def test_eager_export_and_compile_of_one_model_are_identical() -> None:
    net = Net().eval()
    assert tv.diff(net, torch.export.export(net, (X,)), input_data=X).identical
    assert tv.diff(net, torch.compile(net, backend="eager"), input_data=X).identical


def test_a_lora_wrapped_linear_is_one_wrap_and_the_adapters_added() -> None:
    tuned = Net()
    tuned.fc1 = LoRA(tuned.fc1)  # type: ignore[assignment]
    d = tv.diff(Net(), tuned, input_data=X)
    assert edits(d) == expect(added=["fc1.lora_A", "fc1.lora_B"], changed={"fc1": ["wrap"]})
    assert d.lines()[0] == "fc1: wrapped in LoRA (as base_layer)"
    back = tv.diff(tuned, Net(), input_data=X)  # and unwrapped the other way
    assert edits(back) == expect(removed=["fc1.lora_A", "fc1.lora_B"], changed={"fc1": ["wrap"]})


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_quantized_linear_differs_by_the_module_of_its_class() -> None:
    q = torch.ao.quantization.quantize_dynamic(Net().eval(), {nn.Linear}, dtype=torch.qint8)
    d = tv.diff(Net().eval(), q, input_data=X, device="cpu")
    assert edits(d) == expect(changed={p: ["class", "ops", "params"] for p in ("fc1", "fc2")})
    assert d.changed[0].differences[0].detail.startswith("Linear (torch.nn.modules.linear) -> Linear (torch.ao.nn.")

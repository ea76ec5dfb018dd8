"""Parameter accounting and training memory (tensorview.cost.params)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from tensorview.cost.memory import SavedTensors
from tensorview.cost.params import module_params, module_params_and_totals, param_totals
from tensorview.cost.paramtree import plain_tree
from tensorview.cost.training import training_memory

from .fixtures import cost_models as cm
from .fixtures.hf import written_for
from .test_transformers_tier import ARCH_IDS, ARCHS, build

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


def calls_of(model: nn.Module, *args: Any, **kwargs: Any) -> list[tuple[str, nn.Module]]:
    """(path, module) of every module call of a plain forward, the root first; a module is
    named by its first name, as the recorder names it."""
    names: dict[int, str] = {}
    for name, m in model.named_modules(remove_duplicate=False):
        names.setdefault(id(m), name)
    seen: list[tuple[str, nn.Module]] = []

    def pre(m: nn.Module, a: Any) -> None:
        seen.append((names.get(id(m), type(m).__name__), m))

    hook = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        hook.remove()
    return seen


def naive_count(model: nn.Module) -> int:
    """What a per-name count gives (tied weights twice)."""
    return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))


def test_gpt2_tied_embeddings_count_once() -> None:
    model = cm.tied_gpt2("meta")
    assert model.lm_head.weight is model.transformer.wte.weight
    totals = param_totals(model)
    wte = 100 * 32
    assert totals.total_params == naive_count(model) - wte
    unique = {id(p): p for _, p in model.named_parameters(remove_duplicate=False)}
    assert totals.total_params == sum(p.numel() for p in unique.values())
    rows = {
        r.path: r for r in module_params(model, calls_of(model, torch.zeros(1, 8, dtype=torch.long, device="meta")))
    }
    assert rows[""].params == totals.total_params and rows[""].shared_with == ()
    assert rows["lm_head"].params == wte
    assert rows["lm_head"].shared_with == ("transformer.wte",) and rows["lm_head"].shared_params == wte
    assert rows["transformer.wte"].shared_with == ("lm_head",)
    assert rows["transformer"].shared_with == ("lm_head",)  # its subtree holds wte
    assert rows["transformer.h.0"].shared_with == ()
    assert totals.param_bytes == 4 * totals.total_params


def test_one_linear_used_twice() -> None:
    model = cm.TwiceUsed()
    rows = module_params(model, calls_of(model, torch.randn(2, 4)))
    assert [(r.path, r.params, r.repeat) for r in rows] == [
        ("", 20 + 10, False),
        ("fc", 20, False),
        ("fc", 20, True),
        ("head", 10, False),
    ]
    assert param_totals(model).total_params == 30
    assert all(r.shared_with == () for r in rows)


def test_one_module_under_two_names() -> None:
    model = cm.TwoNames()
    assert naive_count(model) == 20 + 20 + 15
    assert param_totals(model).total_params == 20 + 15
    rows = module_params(model, calls_of(model, torch.randn(2, 4)))
    assert [(r.path, r.params, r.repeat, r.shared_with) for r in rows] == [
        ("", 35, False, ()),
        ("a", 20, False, ("b",)),
        ("a", 20, True, ("b",)),
        ("c", 15, False, ()),
    ]
    assert rows[1].shared_params == 20


def test_trainable_and_buffers() -> None:
    model = cm.CNN()
    model.conv1.requires_grad_(False)
    t = param_totals(model)
    conv1 = 3 * 8 * 9 + 8
    everything = sum(p.numel() for p in model.parameters())
    assert (t.total_params, t.trainable_params, t.frozen_params) == (everything, everything - conv1, conv1)
    assert t.buffers == 8 + 8 + 1  # running mean, running var, num_batches_tracked
    assert t.buffer_bytes == 4 * 16 + 8
    rows = {r.path: r for r in module_params(model, calls_of(model, torch.randn(1, 3, 8, 8)))}
    assert (rows["conv1"].params, rows["conv1"].trainable) == (conv1, 0)
    assert (rows["bn"].params, rows["bn"].buffers, rows["bn"].buffer_bytes) == (16, 17, 72)
    assert rows[""].buffers == 17


def test_training_memory_by_hand() -> None:
    model = nn.Sequential(nn.Linear(10, 10), nn.Linear(10, 5))  # 110 + 55 parameters
    model[0].requires_grad_(False)
    m = training_memory(model, optimizer="adam", activation_bytes=1000)
    assert (m.params, m.buffers, m.grads, m.optimizer_state, m.activations) == (660, 0, 220, 440, 1000)
    assert m.total == 660 + 220 + 440 + 1000
    assert training_memory(model, optimizer="sgd").optimizer_state == 0
    assert training_memory(model, optimizer="sgd_momentum").optimizer_state == 220
    assert training_memory(model, optimizer="AdamW", state_dtype=torch.bfloat16).optimizer_state == 2 * 55 * 2
    assert training_memory(model, optimizer=3).optimizer_state == 3 * 220
    half = model.to(torch.bfloat16)
    assert training_memory(half).optimizer_state == 2 * 55 * 2  # the parameter's dtype by default
    assert training_memory(half, state_dtype=torch.float32).optimizer_state == 2 * 55 * 4
    assert training_memory(model).to_dict()["total"] == training_memory(model).total
    with pytest.raises(ValueError):
        training_memory(model, optimizer="lion")


def test_training_memory_with_saved_activations_on_meta() -> None:
    with torch.device("meta"):
        model = cm.MLP(16, 32, 8).train()
    saved = SavedTensors(model)
    with saved:
        model(torch.randn(4, 16, device="meta"))
    m = training_memory(model, activation_bytes=saved.total)
    params = 4 * (16 * 32 + 32 + 32 * 8 + 8)
    assert (m.params, m.grads, m.optimizer_state, m.activations) == (params, params, 2 * params, 1280)


@pytest.mark.parametrize("arch", ARCHS, ids=ARCH_IDS)
def test_transformers_tier_unique_counts(arch: Any) -> None:
    model = build(arch, "meta", **arch.meta_build)
    unique = {id(p): p for _, p in model.named_parameters(remove_duplicate=False)}
    assert param_totals(model).total_params == sum(p.numel() for p in unique.values())
    # the root row of the module table carries the same total
    rows = module_params(model, [("", model)])
    assert rows[0].params == param_totals(model).total_params


def test_llama_7b_parameter_count_on_meta() -> None:
    import transformers

    cfg = transformers.AutoConfig.for_model("llama", **cm.LLAMA_7B)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    # the published count of Llama-2-7B
    assert param_totals(model).total_params == 6_738_415_616
    m = training_memory(model, optimizer="adam")
    assert m.params == m.grads == 4 * 6_738_415_616 and m.optimizer_state == 2 * m.params


def test_a_module_shared_between_branches_counts_once_in_each_call() -> None:
    """A module held by a parent and by a later sibling's subtree (visited in either
    order): every call's row equals what ``module.parameters()``/``buffers()`` give."""
    shared = nn.BatchNorm1d(4)
    inner = nn.Sequential(nn.Linear(4, 4), shared)
    for model in (nn.Sequential(shared, inner), nn.Sequential(inner, shared)):
        calls = list(model.named_modules(remove_duplicate=False))
        rows = module_params(model, calls)
        for (path, m), row in zip(calls, rows):
            params, buffers = list(m.parameters()), list(m.buffers())
            assert (row.path, row.params, row.buffers) == (
                path,
                sum(p.numel() for p in params),
                sum(b.numel() for b in buffers),
            )


def _mixed() -> nn.Module:
    """Frozen and trainable parameters, buffers, two dtypes, a lazy module, a module
    without parameters, nesting."""
    model = nn.Sequential(
        nn.Linear(4, 6),
        nn.Sequential(nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 6, bias=False).to(torch.float64)),
        nn.LazyLinear(3),
    )
    model[0].bias.requires_grad_(False)
    return model


@pytest.mark.parametrize(
    ("build", "plain"),
    [(_mixed, True), (cm.CNN, True), (cm.TwiceUsed, True), (cm.TwoNames, False), (lambda: cm.tied_gpt2("meta"), False)],
    ids=["mixed", "cnn", "twice_used", "two_names", "tied_gpt2"],
)
def test_plain_trees_count_as_the_general_way(build: Any, plain: bool) -> None:
    """A tree where no module, parameter or buffer is reached twice is counted by sums over
    one walk (``plain_tree``); every row and total is what the general count gives."""
    from tensorview.cost import params as P

    model = build()
    calls = list(model.named_modules(remove_duplicate=False))
    calls += calls[1:2]  # a module called again: a repeat
    tree = plain_tree(model)
    assert (tree is not None) == plain
    rows, totals = P.module_params_and_totals(model, calls)
    assert (rows, totals) == P._general(model, calls)
    assert [r.repeat for r in rows] == [any(m is n for _, n in calls[:i]) for i, (_, m) in enumerate(calls)]
    assert rows[-1].repeat and totals == param_totals(model)
    if build is _mixed:
        assert tree is not None
        assert tree[id(model)][1] == [
            24 + 6 + 12 + 36,  # the lazy Linear counts 0
            24 + 12 + 36,
            4 * (24 + 6 + 12) + 8 * 36,
            4 * (24 + 12) + 8 * 36,
            6 + 6 + 1,
            4 * 12 + 8,
        ]


def test_a_call_under_another_path_is_counted_the_general_way() -> None:
    """A module called under a path other than its own in the tree (or from outside the
    model): its parameters are held by a module outside the call, as the general count says."""
    model = cm.MLP()
    outside = nn.Linear(2, 2)
    calls = [("", model), ("fc1", model.fc1), ("other", model.fc2), ("extra", outside)]
    rows, _ = module_params_and_totals(model, calls)
    assert [(r.path, r.params, r.shared_with, r.shared_params) for r in rows] == [
        ("", 808, (), 0),
        ("fc1", 544, (), 0),
        ("other", 264, ("fc2",), 264),
        ("extra", 6, (), 0),
    ]

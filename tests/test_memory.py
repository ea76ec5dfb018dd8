"""tv.memory (tensorview/cost/step.py): the memory of a training step, predicted on meta,
checked against PyTorch's own tracker on a real CPU step written out here."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.cost.memreport import CATEGORIES

from .fixtures import cost_models as cm
from .fixtures.hf import written_for
from .fixtures.memstep import checkpointed_layers, cpu_step_peak, llama, llama_batch

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


def cnn() -> nn.Module:
    torch.manual_seed(0)
    return cm.CNN()


CASES: dict[str, Callable[[], tuple[nn.Module, tuple[Any, ...], dict[str, Any]]]] = {
    "mlp": lambda: (cm.MLP(), (torch.randn(4, 16),), {}),
    "cnn_batchnorm": lambda: (cnn(), (torch.randn(2, 3, 16, 16),), {}),
    "llama": lambda: (llama(), (), llama_batch()),
}


@pytest.mark.parametrize("device", ["meta", "fake"])
@pytest.mark.parametrize("name", CASES)
def test_peak_on_meta_equals_a_real_cpu_step(name: str, device: str) -> None:
    model, args, kwargs = CASES[name]()
    expected = cpu_step_peak(model, args, kwargs)
    data = kwargs if kwargs else args
    report = tv.memory(model, input_data=data, device=device)
    assert report.peak_bytes == expected
    assert report.device == {"meta": "meta", "fake": "fake tensors (FakeTensorMode)"}[device]
    measured = tv.memory(model, input_data=data, device="cpu")
    assert measured.peak_bytes == expected
    assert report.phases == measured.phases  # every phase's peak and end, to the byte
    assert [(e.kind, e.bytes, e.category, e.phase, e.module) for e in report.timeline] == [
        (e.kind, e.bytes, e.category, e.phase, e.module) for e in measured.timeline
    ]


def test_the_parts_at_the_peak_add_up_and_name_what_adam_keeps() -> None:
    model = cm.MLP()
    report = tv.memory(model, input_size=(4, 16))
    n_bytes = sum(p.numel() * 4 for p in model.parameters())
    at_peak = report.at_peak
    assert sum(at_peak.values()) == report.peak_bytes and set(at_peak) == set(CATEGORIES)
    assert report.peak_phase == "optimizer"
    assert at_peak["parameter"] == n_bytes and at_peak["gradient"] == n_bytes
    # Adam: exp_avg and exp_avg_sq per parameter, plus a float32 step counter each
    assert at_peak["optimizer state"] >= 2 * n_bytes
    end = report.live_at(len(report.timeline) - 1)
    assert end["optimizer state"] == 2 * n_bytes + 4 * len(list(model.parameters()))
    assert end["gradient"] == 0 and end["activation"] == 0  # zero_grad(set_to_none=True); nothing kept
    assert end["input"] == 4 * 16 * 4


def test_the_timeline_is_consistent() -> None:
    report = tv.memory(llama(), input_data=llama_batch())
    live, allocated = 0, set()
    for i, e in enumerate(report.timeline):
        assert e.index == i and e.category in CATEGORIES
        live += e.bytes
        assert e.live == live
        if e.kind == "alloc":
            allocated.add(e.block)
            assert e.bytes > 0
        elif e.kind == "free":
            assert e.block in allocated and e.bytes < 0
    phases = [e.phase for e in report.timeline]
    assert phases == sorted(phases, key=["setup", "forward", "backward", "optimizer"].index)
    modules = {e.module for e in report.timeline if e.phase == "forward"}
    assert "model.layers.0.mlp.up_proj" in modules and "lm_head" in modules
    rows = {(m.path, m.phase) for m in report.by_module}
    assert ("model.layers.1.self_attn", "forward") in rows and ("lm_head", "backward") in rows
    for m in report.by_module:
        assert m.peak_bytes >= m.bytes_before and m.peak_bytes <= report.peak_bytes


def test_frozen_parameters_like_lora() -> None:
    model = llama()
    for name, p in model.named_parameters():
        p.requires_grad = "q_proj" in name  # only the attention queries train
    trainable = sum(p.numel() * 4 for p in model.parameters() if p.requires_grad)
    kwargs = llama_batch()
    report = tv.memory(model, input_data=kwargs)
    # PyTorch's own MemTracker refuses frozen parameters (it hooks every parameter's
    # gradient): tensorview's subclass hooks the trainable ones; compared with a CPU step
    assert report.peak_bytes == tv.memory(model, input_data=kwargs, device="cpu").peak_bytes
    # ("cannot register a hook on a tensor that doesn't require gradient"); when this
    # passes, compare with cpu_step_peak instead
    with pytest.raises((RuntimeError, UserWarning)):
        cpu_step_peak(model, (), kwargs)
    grads = max(report.live_at(e.index)["gradient"] for e in report.timeline)
    assert grads == trainable
    full = tv.memory(llama(), input_data=kwargs)
    assert report.peak_bytes < full.peak_bytes
    assert all(p.grad is None for p in model.parameters())


OPTIMIZERS: dict[str, tuple[Any, Any, int]] = {
    # name: (tv.memory's optimizer, the reference's, state tensors per parameter)
    "adam": ("adam", torch.optim.Adam, 2),
    "adamw": (torch.optim.AdamW, torch.optim.AdamW, 2),
    "sgd": ("sgd", torch.optim.SGD, 0),
    "sgd_momentum": (
        functools.partial(torch.optim.SGD, lr=0.1, momentum=0.9),
        functools.partial(torch.optim.SGD, lr=0.1, momentum=0.9),
        1,
    ),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizers(name: str) -> None:
    mine, reference, states = OPTIMIZERS[name]
    model = cm.MLP()
    x = torch.randn(4, 16)
    report = tv.memory(model, input_data=x, optimizer=mine)
    assert report.peak_bytes == cpu_step_peak(model, (x,), {}, reference)
    n_bytes = sum(p.numel() * 4 for p in model.parameters())
    state = report.live_at(len(report.timeline) - 1)["optimizer state"]
    assert state - states * n_bytes in ((0,) if states < 2 else (4 * len(list(model.parameters())),))


def test_zero_grad_set_to_none_false_keeps_the_gradients() -> None:
    model = cm.MLP()
    x = torch.randn(4, 16)
    n_bytes = sum(p.numel() * 4 for p in model.parameters())
    kept = tv.memory(model, input_data=x, set_to_none=False, steps=2)
    assert kept.peak_bytes == tv.memory(model, input_data=x, set_to_none=False, steps=2, device="cpu").peak_bytes
    assert kept.live_at(len(kept.timeline) - 1)["gradient"] == n_bytes
    one = tv.memory(model, input_data=x, set_to_none=False)
    assert one.peak_bytes == cpu_step_peak(model, (x,), {}, set_to_none=False)
    # a second step starts with Adam's state (and, kept, the gradients) already there
    dropped = tv.memory(model, input_data=x, steps=2)
    assert dropped.phases["forward"].peak_bytes < kept.phases["forward"].peak_bytes
    assert {e.step for e in kept.timeline} == {0, 1}


def test_eval_is_one_forward_without_grad() -> None:
    model = cnn()
    report = tv.memory(model, input_size=(2, 3, 16, 16), mode="eval")
    assert set(report.phases) == {"forward"}
    assert report.at_peak["gradient"] == 0
    assert report.peak_bytes < tv.memory(model, input_size=(2, 3, 16, 16)).phases["forward"].peak_bytes


def test_the_model_and_the_random_state_are_untouched() -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.BatchNorm1d(8)).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.random.get_rng_state()
    for device in ("meta", "cpu"):
        tv.memory(model, input_size=(4, 8), device=device)
    assert not model.training and all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.equal(rng, torch.random.get_rng_state())


def test_a_model_on_meta_is_predicted_as_on_the_cpu() -> None:
    kwargs = llama_batch()
    with torch.device("meta"):
        on_meta = llama()
    assert tv.memory(on_meta, input_data=kwargs).peak_bytes == cpu_step_peak(llama(), (), kwargs)


def test_the_table() -> None:
    report = tv.memory(llama(), input_data=llama_batch())
    text = str(report)
    assert f"({report.peak_bytes:,} B)" in text and "Peak:" in text
    assert "\n    model.layers  " not in text  # a ModuleList is not called
    lines = text.splitlines()
    assert any(line.split()[:2] == ["lm_head", "backward"] for line in lines)
    assert lines[0] == "Memory of LlamaForCausalLM on meta (train, optimizer adam)"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "same"}, r"mode: 'same'.*eval.*train"),
        ({"optimizer": "adamm"}, r"optimizer.*'adamm'.*adam"),
        ({"optimizer": 3}, r"optimizer must be a name"),
        ({"steps": 0}, r"steps must be an int of at least 1, got 0"),
        ({"accumulate": True}, r"accumulate must be an int of at least 1, got True"),
        ({"autocast": "bf16"}, r"autocast must be a floating dtype"),
        ({"checkpointing": ["fc3"]}, r"no module 'fc3'.*'fc1'"),
        ({"optimzer": "adam"}, r"did you mean optimizer"),
    ],
)
def test_bad_options_are_named(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises((tv.InvalidInputError, tv.InvalidTypeError), match=match):
        tv.memory(cm.MLP(), input_size=(2, 16), **kwargs)


def test_nothing_to_backpropagate_says_so() -> None:
    model = cm.MLP().requires_grad_(False)
    with pytest.raises(tv.InvalidInputError, match="nothing to backpropagate.*mode='eval'"):
        tv.memory(model, input_size=(2, 16))


def test_a_step_that_fails_on_any_device_says_a_real_one_fails_too() -> None:
    """BatchNorm given one value per channel in training mode raises in PyTorch itself:
    the same error on meta and on fake tensors, so the hint does not send the user to the
    CPU as if a real step would run (it raises the same there, checked)."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.BatchNorm2d(4), nn.Flatten())
    with pytest.raises(tv.RecordingError, match="Expected more than 1 value per channel") as info:
        tv.memory(model, input_size=(1, 3, 8, 8))
    assert (
        info.value.hint.startswith("the same error on meta and on fake tensors") and "raises it too" in info.value.hint
    )
    with pytest.raises(tv.RecordingError, match="Expected more than 1 value per channel"):
        tv.memory(model, input_size=(1, 3, 8, 8), device="cpu")
    assert tv.memory(model, input_size=(2, 3, 8, 8)).peak_bytes > 0


def test_autocast_bfloat16_equals_a_real_cpu_step() -> None:
    model, kwargs = llama(), llama_batch()
    report = tv.memory(model, input_data=kwargs, autocast=torch.bfloat16)
    assert report.peak_bytes == cpu_step_peak(model, (), kwargs, amp=torch.bfloat16)
    assert report.phases == tv.memory(model, input_data=kwargs, autocast=torch.bfloat16, device="cpu").phases
    plain = tv.memory(model, input_data=kwargs)
    # the forward keeps bfloat16 copies of the weights and bfloat16 activations
    assert report.phases["forward"].peak_bytes != plain.phases["forward"].peak_bytes
    assert "autocast bfloat16" in str(report).splitlines()[0]


def test_checkpointing_named_modules_equals_checkpointing_by_hand() -> None:
    model, kwargs = llama(num_hidden_layers=4), llama_batch(seq=32)
    report = tv.memory(model, input_data=kwargs, checkpointing=["model.layers"])
    # on meta, not on fake tensors: the recomputation (in autograd's meta thread) also takes
    # the CPU's fused attention, so the tensors it saves match the forward's
    assert report.device == "meta"
    assert report.peak_bytes == cpu_step_peak(checkpointed_layers(model), (), kwargs)
    plain = tv.memory(model, input_data=kwargs)
    assert report.phases["forward"].end_bytes < plain.phases["forward"].end_bytes  # fewer activations kept
    recomputed = {m.path for m in report.by_module if m.phase == "recompute"}
    assert {f"model.layers.{i}.mlp" for i in range(4)} <= recomputed
    assert "forward" not in vars(model.model.layers[0])  # the caller's layers are not wrapped
    # a single module by its path
    one = tv.memory(model, input_data=kwargs, checkpointing="model.layers.0")
    assert plain.phases["forward"].end_bytes > one.phases["forward"].end_bytes > report.phases["forward"].end_bytes


def test_max_batch_size_is_the_largest_that_fits() -> None:
    model = cnn()
    report = tv.memory(model, input_size=(2, 3, 16, 16))
    budget = 3 * report.peak_bytes

    def peak(b: int) -> int:
        return tv.memory(model, input_size=(b, 3, 16, 16)).peak_bytes

    best = report.max_batch_size(budget)
    assert best > 2 and peak(best) <= budget < peak(best + 1)
    assert report.max_batch_size(f"{budget}B") == best
    assert report.max_batch_size(1000) == 0  # not even one sample
    with pytest.raises(tv.InvalidInputError, match="bad memory budget '80 GiBB'.*GiB"):
        report.max_batch_size("80 GiBB")
    measured = tv.memory(model, input_size=(2, 3, 16, 16), device="cpu")
    with pytest.raises(tv.InvalidInputError, match="max_batch_size needs a report of tv.memory on meta"):
        measured.max_batch_size(budget)


def test_save_draws_the_timeline_as_svg_with_escaped_names(tmp_path: Any) -> None:
    import xml.etree.ElementTree as ET

    hostile, control = 'x<y>&"z', "line\nbreak\x00"
    model = nn.Sequential()
    model.add_module(hostile, nn.Linear(16, 32))
    model.add_module(control, nn.GELU())
    model.add_module("out", nn.Linear(32, 4))
    report = tv.memory(model, input_size=(4, 16))
    path = tmp_path / "mem.svg"
    report.save(path)
    root = ET.parse(path).getroot()  # well-formed: the names are escaped
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert hostile in texts and "line\\nbreak\\x00" in texts
    assert {"setup", "forward", "backward", "optimizer"} <= {t.text for t in root.iter(f"{ns}title")}
    table = report.table(depth=1)
    assert "  line\\nbreak\\x00  forward" in table and "\x00" not in table
    assert f"peak {tv.cost.fmt_bytes(report.peak_bytes)}" in texts
    titles = {t.text for p in root.iter(f"{ns}polygon") for t in p.iter(f"{ns}title")}
    assert {"parameter", "gradient", "optimizer state", "activation"} <= titles
    with pytest.raises(tv.InvalidInputError, match="formats are SVG and HTML"):
        report.save(tmp_path / "mem.png")


class NoMetaKernel(nn.Module):
    """A forward that refuses meta tensors, as an op without a meta kernel does."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.is_meta:
            raise NotImplementedError("no meta kernel for this op")
        return self.fc(x)


def test_an_op_without_a_meta_kernel_runs_on_fake_tensors() -> None:
    model = NoMetaKernel()
    x = torch.randn(4, 8)
    report = tv.memory(model, input_data=x)
    assert report.device == "fake tensors (FakeTensorMode)"
    assert report.peak_bytes == cpu_step_peak(model, (x,), {})


def test_the_docs_example_prints_its_table() -> None:
    """docs/cost-model.md's tv.memory example: its block, run again, prints the text block
    after the memory-table marker."""
    import contextlib
    import io
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "cost-model.md").read_text(encoding="utf-8")
    section = text[text.index("## Will it fit?") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    table = re.search(r"<!-- memory-table[^\n]*-->\n```text\n(.*?)```", section, re.S)
    assert code is not None and table is not None
    namespace: dict[str, Any] = {"__name__": "docs_memory"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code.group(1), "cost-model.md[memory]", "exec"), namespace)
    assert str(namespace["report"]) + "\n" == table.group(1)


def test_gradient_accumulation_equals_micro_batches_by_hand() -> None:
    model, kwargs = llama(), llama_batch()
    report = tv.memory(model, input_data=kwargs, accumulate=3)
    assert report.peak_bytes == cpu_step_peak(model, (), kwargs, micro=3)
    assert [e.phase for e in report.timeline if e.kind == "alloc"].count("forward") == 3 * sum(
        1 for e in tv.memory(model, input_data=kwargs).timeline if e.kind == "alloc" and e.phase == "forward"
    )
    # from the second micro-batch on, the forward runs with the gradients of the first alive
    n_bytes = sum(p.numel() * 4 for p in model.parameters())
    forwards = [e for e in report.timeline if e.phase == "forward"]
    assert report.live_at(forwards[-1].index)["gradient"] == n_bytes
    assert "3 micro-batches a step" in str(report).splitlines()[0]


class ClippedSGD(torch.optim.SGD):
    """SGD that reads the gradients' norm as a Python number (as clipping code does)."""

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        norm = float(torch.stack([p.grad.norm() for g in self.param_groups for p in g["params"]]).norm())
        scale = min(1.0, 1.0 / (norm + 1e-6)) * int(torch.tensor(1))
        for g in self.param_groups:
            for p in g["params"]:
                p.grad.mul_(scale)
        return super().step(closure)


def test_an_optimizer_reading_numbers_runs_on_meta() -> None:
    """float(t), int(t) and t.item() of a meta tensor give 1 in the optimizer step: the
    sizes of what it makes do not depend on them (Adafactor: tests/test_memory_models.py)."""
    model, x = cm.MLP(), torch.randn(4, 16)
    report = tv.memory(model, input_data=x, optimizer=functools.partial(ClippedSGD, lr=0.1))
    assert report.device == "meta"
    assert report.peak_bytes == cpu_step_peak(model, (x,), {}, functools.partial(ClippedSGD, lr=0.1))

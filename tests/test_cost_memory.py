"""Bytes saved for backward (tensorview.cost.memory): hand counts, dedup rules, meta = CPU."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

import tensorview as tv
from tensorview.cost.attention import _cpu_would_fuse
from tensorview.cost.memory import (
    CPUAttentionOnMeta,
    SavedTensors,
    dtype_size,
    sdpa_as_on_cpu,
    tensor_nbytes,
)

from .fixtures import cost_models as cm
from .fixtures.hf import written_for

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


def saved(model: nn.Module, *args: Any, meta_attention: bool = True, **kwargs: Any) -> SavedTensors:
    s = SavedTensors(model)
    with s:
        if meta_attention:
            with CPUAttentionOnMeta():
                model(*args, **kwargs)
        else:
            model(*args, **kwargs)
    return s


def _llama() -> nn.Module:
    import transformers

    return transformers.AutoModel.from_config(cm.tiny_llama_config())


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[str], tuple[Any, ...]]]] = {
    "mlp": (cm.MLP, lambda d: (torch.randn(4, 16, device=d),)),
    "cnn_batchnorm": (cm.CNN, lambda d: (torch.randn(2, 3, 16, 16, device=d),)),
    "matmul_attention": (cm.MatmulAttention, lambda d: (torch.randn(2, 10, 32, device=d),)),
    "sdpa_attention": (cm.SDPAttention, lambda d: (torch.randn(2, 10, 32, device=d),)),
    "llama": (_llama, lambda d: (torch.randint(0, 100, (1, 8), device=d),)),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_meta_equals_cpu(name: str) -> None:
    make, inputs = MODELS[name]
    got = {}
    for device in ("cpu", "meta"):
        torch.manual_seed(0)
        with torch.device(device):
            model = make().train()
        s = saved(model, *inputs(device))
        got[device] = (s.total, s.param_total, sorted(s.saved_bytes.values()))
    assert got["cpu"] == got["meta"]
    assert got["cpu"][0] > 0


def test_mlp_by_hand() -> None:
    model = cm.MLP(16, 32, 8)
    x = torch.randn(4, 16)
    s = saved(model, x)
    # fc1 keeps x (4x16), gelu its input (4x32), fc2 the gelu output (4x32); float32
    assert s.total == 4 * (4 * 16 + 4 * 32 + 4 * 32)
    # fc2's weight is saved too (for the gradient of its input), but it is a parameter;
    # fc1's is not (x needs no gradient)
    assert s.param_total == 4 * (8 * 32)


def test_sdpa_on_meta_saves_the_attention_weights_unless_swapped() -> None:
    make, inputs = MODELS["sdpa_attention"]
    with torch.device("meta"):
        model = make().train()
    fused = saved(model, *inputs("meta")).total
    math = saved(model, *inputs("meta"), meta_attention=False).total
    b, h, t = 2, 4, 10
    # the math path keeps the float32 attention weights (b x h x t x t), the fused kernel a
    # log-sum-exp (b x h x t) instead
    assert math - fused >= 4 * (b * h * t * t - b * h * t)


def _runs_cpu_flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kw: Any) -> bool:
    ops: list[str] = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            ops.append(str(func._overloadpacket))
            return func(*args, **(kwargs or {}))

    with Log():
        F.scaled_dot_product_attention(q, k, v, **kw)
    return "aten._scaled_dot_product_flash_attention_for_cpu" in ops


def _qkv(*shapes: tuple[int, ...], dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    return [torch.randn(*s, dtype=dtype, requires_grad=True) for s in shapes]


B, H, S, D = 2, 4, 10, 8
SDPA_CASES: dict[str, tuple[list[torch.Tensor], dict[str, Any]]] = {
    "plain": (_qkv((B, H, S, D), (B, H, S, D), (B, H, S, D)), {}),
    "causal": (_qkv((B, H, S, D), (B, H, S, D), (B, H, S, D)), dict(is_causal=True)),
    "bool_mask": (_qkv((B, H, S, D), (B, H, S, D), (B, H, S, D)), dict(attn_mask=torch.rand(S, S) > 0.3)),
    "float_mask": (_qkv((B, H, S, D), (B, H, S, D), (B, H, S, D)), dict(attn_mask=torch.zeros(B, 1, S, S))),
    "learned_mask": (
        _qkv((B, H, S, D), (B, H, S, D), (B, H, S, D)),
        dict(attn_mask=torch.zeros(1, H, S, S, requires_grad=True)),
    ),
    "dropout": (_qkv((B, H, S, D), (B, H, S, D), (B, H, S, D)), dict(dropout_p=0.1)),
    "gqa": (_qkv((B, H, S, D), (B, 2, S, D), (B, 2, S, D)), dict(enable_gqa=True)),
    "three_dims": (_qkv((H, S, D), (H, S, D), (H, S, D)), {}),
    "bfloat16": (_qkv((B, H, S, D), (B, H, S, D), (B, H, S, D), dtype=torch.bfloat16), {}),
    "cross": (_qkv((B, H, 1, D), (B, H, S, D), (B, H, S, D)), {}),
    "strided_last_dim": (
        [torch.randn(B, H, D, S).transpose(2, 3).detach().requires_grad_(), *_qkv((B, H, S, D), (B, H, S, D))],
        {},
    ),
}


@pytest.mark.parametrize("case", list(SDPA_CASES))
def test_fused_attention_choice_matches_the_cpu(case: str) -> None:
    (q, k, v), kw = SDPA_CASES[case]
    assert _cpu_would_fuse(
        q, k, v, kw.get("attn_mask"), kw.get("dropout_p", 0.0), kw.get("enable_gqa", False)
    ) == _runs_cpu_flash(q, k, v, **kw)
    if kw.get("dropout_p"):
        return
    # and the saved bytes on meta equal the CPU's
    on_cpu, on_meta = SavedTensors(), SavedTensors()
    with on_cpu:
        F.scaled_dot_product_attention(q, k, v, **kw)
    meta = [t.detach().to("meta").requires_grad_() for t in (q, k, v)]
    mkw = {n: (a.to("meta") if isinstance(a, torch.Tensor) else a) for n, a in kw.items()}
    with on_meta:
        out = sdpa_as_on_cpu(*meta, **mkw)
    assert out.shape == F.scaled_dot_product_attention(q, k, v, **kw).shape
    assert on_meta.total == on_cpu.total


def test_sdpa_as_on_cpu_off_meta_is_the_function() -> None:
    q, k, v = _qkv((B, H, S, D), (B, H, S, D), (B, H, S, D))
    torch.testing.assert_close(
        sdpa_as_on_cpu(q, k, v, is_causal=True), F.scaled_dot_product_attention(q, k, v, is_causal=True)
    )


def test_each_storage_once() -> None:
    x = torch.randn(8, 8, requires_grad=True)
    s = SavedTensors()
    with s:
        s.current = "a"
        y = x * 2  # a product with a number saves nothing
        z = y * y  # saves y (twice, once counted)
        s.current = "b"
        w = y.sin()  # saves y again, under another key
        v = y[:4].cos()  # a view of y's storage: same storage
        s.current = None
        (z + w + v.sum()).sum()
    per_key = s.saved_bytes
    assert per_key == {"a": 256, "b": 256}
    assert s.total == 256  # y once over the whole forward
    assert s.bytes_of(["a", "b"]) == 256
    assert s.bytes_of(["a"]) == 256 and s.bytes_of([]) == 0


def test_parameters_are_kept_apart() -> None:
    lin = nn.Linear(8, 4)
    x = torch.randn(2, 8, requires_grad=True)  # else the weight is not needed for backward
    with_model = SavedTensors(lin)
    with with_model:
        lin(x)
    without = SavedTensors()  # recognised as nn.Parameter (or a view of one)
    with without:
        lin(x)
    for s in (with_model, without):
        assert s.total == 2 * 8 * 4
        assert s.param_total == 8 * 4 * 4
    buf = nn.BatchNorm1d(8).train()
    s = SavedTensors(buf)
    with s:
        buf(x)
    assert s.param_total >= 8 * 4  # weight (and running stats, as buffers) are not activations


def test_no_grad_saves_nothing() -> None:
    lin = nn.Linear(8, 4)
    s = SavedTensors(lin)
    with s, torch.no_grad():
        lin(torch.randn(2, 8))
    assert s.total == 0 and s.storages == {}


def test_recorded_forward_saves_the_same() -> None:
    """The hooks see through the recorder's tensor subclass."""
    model = cm.MLP()
    x = torch.randn(4, 16)
    plain = saved(model, x).total
    s = SavedTensors(model)
    with s, tv.Recorder(model):
        model(x)
    assert s.total == plain


def test_sizes() -> None:
    assert dtype_size(torch.bfloat16) == 2 and dtype_size("float32") == 4 and dtype_size("torch.int64") == 8
    assert dtype_size("bool") == 1
    assert tensor_nbytes((2, 3, 4), "float16") == 48
    with pytest.raises(ValueError):
        dtype_size("nope")


def test_saved_tensors_are_detached_below_the_dispatch_modes() -> None:
    """The pack hook hands autograd a detached alias (no cycle through the saved output's
    grad_fn) without a ``detach`` op reaching the dispatch modes (the FLOP counter would
    handle one per saved tensor); backward still gets the values it needs."""
    seen: list[str] = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 5, requires_grad=True)
    saved = SavedTensors()
    with saved, Ops():
        y = (x @ w).tanh()  # mm saves x and w, tanh its output
    assert "aten.detach" not in seen and "aten.mm" in seen and "aten.tanh" in seen
    assert saved.total == 4 * (3 * 4 + 4 * 5 + 3 * 5)  # x and w (mm), tanh's output: float32
    y.sum().backward()
    assert torch.allclose(w.grad, x.detach().T @ (1 - y.detach() ** 2))


def test_storages_freed_mid_forward_are_not_mistaken_for_later_ones() -> None:
    """A storage is known by its address: every storage saved stays referenced while the
    hooks are active, so one freed mid-forward cannot hand its address to a later one."""
    x = torch.randn(64, requires_grad=True)
    s = SavedTensors()
    with s:
        s.current = "loop"
        for _ in range(20):
            y = (x * 2).exp()  # exp saves its result; the last one (and its graph) is freed
        del y
    assert s.total == 20 * 64 * 4 and len(s.storages["loop"]) == 20


def test_tables_read_while_the_hooks_are_active() -> None:
    """What was saved so far can be read mid-forward; later saves are added after it."""
    x = torch.randn(8, 8, requires_grad=True)
    lin = nn.Linear(8, 8)
    s = SavedTensors(lin)
    with s:
        s.current = "a"
        y = lin(x).exp()  # x and the weight (a parameter), then exp's result
        assert s.saved_bytes == {"a": 2 * 256} and s.param_total == 256
        s.current = "b"
        y.sin()  # y again, under another key
        assert s.saved_bytes == {"a": 2 * 256, "b": 256}
    assert s.total == 2 * 256 and s.bytes_of(["b"]) == 256 and set(s.param_storages) == {"a"}


def test_without_knowing_whether_torch_functions_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where torch cannot say whether torch functions are all switched off (before 2.2),
    the hook switches them off itself, once, and measures the same."""
    from tensorview.cost import memory

    model, x = cm.MLP(), torch.randn(4, 16)
    expected = saved(model, x)
    monkeypatch.setattr(memory, "_function_off", lambda: False)
    got = saved(model, x)
    assert (got.total, got.param_total, got.saved_bytes) == (expected.total, expected.param_total, expected.saved_bytes)
    assert got.total > 0

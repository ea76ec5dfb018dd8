"""``tv.memory`` (issue 23): how long predicting a training step takes on meta, and, where a
GPU is, how close the prediction is to what CUDA allocates.

- Llama-3-70B's shapes (80 layers, bfloat16 weights), batch 1 x 4096 tokens, AdamW, on
  meta: target < 10 s (median of 3 after a warm-up; the model is built once, outside);
- with CUDA: three models trained for one step on the GPU, ``torch.cuda.max_memory_allocated()``
  beside ``tv.memory(device="meta")`` and ``tv.memory(device="cuda")`` (PyTorch's tracker on the
  real step); target: meta within 5% of CUDA's figure.

    python bench/memory.py          # exit status 1 when a target fails
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from models import LLAMA3_70B  # noqa: E402

import tensorview as tv  # noqa: E402

TARGET_S = 10.0
GPU_TOLERANCE = 0.05


def llama(device: str = "meta", dtype: torch.dtype = torch.bfloat16, **config: Any) -> torch.nn.Module:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model("llama", **config)
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype)


def llama70b() -> tuple[bool, str]:
    model = llama(**LLAMA3_70B)
    ids = torch.zeros(1, 4096, dtype=torch.long)
    batch = {"input_ids": ids, "labels": ids}
    tv.memory(model, input_data=batch, optimizer="adamw")  # warm-up
    times, report = [], None
    for _ in range(3):
        start = time.perf_counter()
        report = tv.memory(model, input_data=batch, optimizer="adamw")
        times.append(time.perf_counter() - start)
    assert report is not None
    s = statistics.median(times)
    phases = ", ".join(f"{k} {tv.cost.fmt_bytes(v.peak_bytes)}" for k, v in report.phases.items())
    return s < TARGET_S, f"{s:.2f} s; peak {tv.cost.fmt_bytes(report.peak_bytes)} in {report.peak_phase} ({phases})"


def gpu_models() -> dict[str, tuple[Any, Any]]:
    from torch import nn

    small = dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2816, num_attention_heads=16,
                 num_key_value_heads=4, vocab_size=32000)  # fmt: skip
    cnn = nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.Conv2d(64, 128, 3, stride=2),
        nn.BatchNorm2d(128), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000),
    )  # fmt: skip
    mlp = nn.Sequential(nn.Linear(4096, 16384), nn.GELU(), nn.Linear(16384, 4096))
    ids = torch.zeros(4, 1024, dtype=torch.long)
    return {
        "mlp 4096-16384-4096, batch 64": (mlp, torch.randn(64, 4096)),
        "cnn with BatchNorm, batch 32x3x224x224": (cnn, torch.randn(32, 3, 224, 224)),
        "llama 4 x 1024 (float32), batch 4x1024": (
            llama("cpu", torch.float32, **small),
            {"input_ids": ids, "labels": ids},
        ),
    }


def cuda_peak(model: Any, data: Any) -> int:
    """One real step on the GPU: the same step as tv.memory's (forward, loss, backward,
    outputs dropped, Adam step, zero_grad), peak from CUDA's allocator statistics."""
    import copy

    model = copy.deepcopy(model).cuda().train()
    data = {k: v.cuda() for k, v in data.items()} if isinstance(data, dict) else data.cuda()
    opt = torch.optim.Adam(model.parameters())
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    out = model(**data) if isinstance(data, dict) else model(data)
    loss = out.loss if hasattr(out, "loss") else out.sum()
    loss.backward()
    del out, loss
    opt.step()
    opt.zero_grad()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()


def gpu() -> list[tuple[str, bool | None, str]]:
    if not torch.cuda.is_available():
        return [("meta within 5% of torch.cuda.max_memory_allocated()", None, "no CUDA device here: not measured")]
    out: list[tuple[str, bool | None, str]] = []
    for name, (model, data) in gpu_models().items():
        real = cuda_peak(model, data)
        meta = tv.memory(model, input_data=data).peak_bytes
        tracked = tv.memory(model, input_data=data, device="cuda").peak_bytes
        off = meta / real - 1
        detail = f"meta {meta:,} B, tracker on cuda {tracked:,} B, max_memory_allocated {real:,} B ({off:+.1%})"
        out.append((f"{name}: meta within 5% of CUDA", abs(off) <= GPU_TOLERANCE, detail))
    return out


def main() -> int:
    results = [("Llama-3-70B shape, 1 x 4096, AdamW, bf16: tv.memory on meta < 10 s", *llama70b())]
    results += gpu()
    failed = [name for name, ok, _ in results if ok is False]
    for name, ok, detail in results:
        mark = {True: "PASS", False: "FAIL", None: "----"}[ok]
        print(f"{mark}  {name}: {detail}")
    if failed:
        print(f"{len(failed)} target(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""``tv.summary`` against torchinfo's ``summary`` on the same models, in one process (issue
22): ResNet-50 (bench/replicas.py, torchvision's layout) on meta and on the CPU, BERT-base,
GPT-2 and a 7B Llama (Llama-2-7B's config) built on meta.

Each tool gets its own copy of the model (torchinfo moves the model it is given to the
device and sets its mode), the same inputs and the same device, and runs with its defaults:
``tv.summary`` records one forward with grad enabled in training mode on a copy (FLOPs,
bytes saved for backward, parameters), torchinfo runs one forward without grad in eval
mode with hooks (parameters, output shapes, mult-adds).  "resnet50 (cpu model, defaults)"
passes no device: torchinfo runs the CPU model on the CPU, tv.summary on meta (its
``device="auto"``).  The tools run in turn, after one warm-up each, and each is judged by
its least CPU time over the rounds, with one intra-op thread (as
``least_cpu_interleaved`` in timing.py): ratios are taken in the same run.

``tv.summary`` keeps the templates of the meta kernels it ran for the process
(tensorview/cost/replay.py), so a repeated call runs none again; **cold** is tv.summary
with that table emptied before each run (a first call in a process), for information.

    python bench/summary_speed.py    # also run by bench/run.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models import _transformer  # noqa: E402
from timing import least_cpu_interleaved  # noqa: E402

from tensorview.api import summary  # noqa: E402

REPEATS = 5
#: Llama-2-7B's shapes
LLAMA_7B = dict(
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=32,
    vocab_size=32000,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)


def _resnet(device: str, given: bool = True) -> Callable[[], tuple[nn.Module, dict[str, Any], str | None]]:
    def build() -> tuple[nn.Module, dict[str, Any], str | None]:
        import replicas

        model, inputs = replicas.resnet50(device)
        return model, inputs, device if given else None

    return build


def _hf(model_type: str, **config: Any) -> Callable[[], tuple[nn.Module, dict[str, Any], str | None]]:
    def build() -> tuple[nn.Module, dict[str, Any], str | None]:
        model, inputs = _transformer(model_type, **config)()
        return model, inputs, "meta"

    return build


#: name -> builder of (model, inputs as keyword arguments, device: None for the defaults)
MODELS: dict[str, Callable[[], tuple[nn.Module, dict[str, Any], str | None]]] = {
    "resnet50 (meta)": _resnet("meta"),
    "resnet50 (cpu model, defaults)": _resnet("cpu", given=False),
    "resnet50 (cpu, device='cpu')": _resnet("cpu"),
    "bert-base (meta)": _hf("bert"),
    "gpt2 (meta)": _hf("gpt2"),
    "llama 7B (meta)": _hf("llama", **LLAMA_7B),
}


def measure(repeats: int = REPEATS, only: str | None = None) -> dict[str, dict[str, Any]]:
    """``{model: {"tv": seconds, "torchinfo": seconds, "cold": seconds}}`` (least CPU
    time), or the error a tool raised, as text."""
    import torchinfo

    from tensorview.cost.replay import clear_templates

    out: dict[str, dict[str, Any]] = {}
    for name, build in MODELS.items():
        if only and only not in name:
            continue
        model, inputs, device = build()
        theirs, _, _ = build()  # torchinfo moves and switches the model it is given

        tv_device = {} if device is None else {"device": device}
        ti_device = {} if device is None else {"device": device}

        def tv(model: nn.Module = model, inputs: dict[str, Any] = inputs, kw: dict[str, Any] = tv_device) -> Any:
            return summary(model, input_data=inputs, verbose=0, **kw)

        def ti(model: nn.Module = theirs, inputs: dict[str, Any] = inputs, kw: dict[str, Any] = ti_device) -> Any:
            return torchinfo.summary(model, input_data=inputs, verbose=0, **kw)

        def cold() -> Any:
            clear_templates()
            return tv()

        row: dict[str, Any] = {}
        try:
            row["tv"], row["torchinfo"], row["cold"] = least_cpu_interleaved([tv, ti, cold], repeats)
        except Exception as e:  # report, do not hide
            row["error"] = f"{type(e).__name__}: {e}"[:120]
        out[name] = row
        print(f"  summary speed, {name}: {row}", file=sys.stderr, flush=True)
    return out


def lines(m: dict[str, dict[str, Any]]) -> list[str]:
    rows = []
    for name, r in m.items():
        if "error" in r:
            rows.append(f"{name}: failed: {r['error']}")
        else:
            rows.append(
                f"{name}: tv.summary {r['tv']:.3f} s, torchinfo {r['torchinfo']:.3f} s: "
                f"{r['tv'] / r['torchinfo']:.2f}x (cold {r['cold']:.3f} s: {r['cold'] / r['torchinfo']:.2f}x)"
            )
    return rows


def targets(m: dict[str, dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
    """tv.summary <= torchinfo on every model with the tools' defaults and on meta; with the
    forward forced onto the CPU, apart (tv.summary then runs the real forward with grad in
    training mode and records it; torchinfo runs it without grad in eval mode)."""
    out: list[tuple[str, bool | None, str]] = []
    forced = {n: r for n, r in m.items() if "device='cpu'" in n}
    for title, group in (
        ("tv.summary <= torchinfo's summary (CPU time, same run)", {n: r for n, r in m.items() if n not in forced}),
        ("tv.summary <= torchinfo's summary with the forward forced onto the CPU", forced),
    ):
        if not group:
            continue
        ratios = {n: r["tv"] / r["torchinfo"] for n, r in group.items() if "error" not in r}
        failed = [n for n, r in group.items() if "error" in r]
        detail = ", ".join(f"{n} {x:.2f}x" for n, x in ratios.items()) + "".join(f", {n} failed" for n in failed)
        out.append((title, not failed and all(x <= 1.0 for x in ratios.values()), detail))
    return out


if __name__ == "__main__":
    measured = measure(only=sys.argv[1] if len(sys.argv) > 1 else None)
    print("\n".join(lines(measured)))
    for name, ok, detail in targets(measured):
        print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}")

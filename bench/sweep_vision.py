"""A sweep for wrong graphs over torchvision's and timm's models (random weights, no
download), each recorded with ``draw_graph`` on two devices and judged by judge.py.

    PYTHONPATH=$PWD python bench/sweep_vision.py [--workers 8] [--timm N] [--out FILE] [name ...]

Devices: the GPU and meta where torch sees a GPU (the development machines have neither
torchvision nor a GPU: this ran on a lent H200, see docs/models.md), else the CPU and
meta.  Every torchvision classification, segmentation, video and optical-flow model, the
detection models (their plain forward and recording on the real device: NMS and the
box sampling read values, which meta has not; see ``VALUES``), and one timm model per
family (the smallest-named: ``tiny``, ``nano``, ``small``...) at its default input size.
``--full`` also makes what a user gets beyond the graph (``outputs``).  Prints one line per
model and exits 1 when a problem was found that is not the model's
own (a recording on meta that fails where the plain forward fails on meta too is noted).
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import inspect
import multiprocessing
import os
import sys
import time
import warnings
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(__file__))
from judge import PLAIN_FAILS, outputs  # noqa: E402

#: torchvision model families whose forward reads values (NMS, proposal sampling, argmax
#: of a mask): recorded on the real device only (on meta every value-dependent size fails)
VALUES = ("detection",)


def _real_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


#: a key standing for the forward's first parameter (``x`` in most models, ``input`` in some)
FIRST = "<first>"


def _image(size: int = 224) -> torch.Tensor:
    return torch.randn(1, 3, size, size)


def torchvision_cases() -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (torchvision module, forward keyword arguments)."""
    import torchvision

    cases: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in torchvision.models.list_models(module=torchvision.models):
        cases[name] = ("classification", {FIRST: _image(299 if name == "inception_v3" else 224)})
    for name in torchvision.models.list_models(module=torchvision.models.segmentation):
        cases[name] = ("segmentation", {FIRST: _image(224)})
    for name in torchvision.models.list_models(module=torchvision.models.video):
        frames, size = (16, 224) if name.startswith(("mvit", "s3d", "swin3d")) else (8, 112)
        cases[name] = ("video", {FIRST: torch.randn(1, 3, frames, size, size)})
    for name in torchvision.models.list_models(module=torchvision.models.optical_flow):
        cases[name] = ("optical_flow", {"image1": _image(128), "image2": _image(128), "num_flow_updates": 3})
    for name in torchvision.models.list_models(module=torchvision.models.detection):
        cases[name] = ("detection", {"images": [torch.rand(3, 224, 224)]})
    return cases


def timm_cases(limit: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """One timm model per family (the first name's part before ``_``), the smallest-named."""
    try:
        import timm
    except ImportError:
        return {}
    families: dict[str, list[str]] = {}
    for name in timm.list_models():
        families.setdefault(name.split("_")[0], []).append(name)
    order = ("atto", "femto", "pico", "nano", "tiny", "xxs", "xs", "small", "s", "b0", "18", "lite0")

    def rank(name: str) -> tuple[int, str]:
        parts = name.split("_")[1:]
        return (min((order.index(p) for p in parts if p in order), default=len(order)), name)

    picked = sorted(min(names, key=rank) for names in families.values())[:limit]
    return {f"timm/{n}": ("timm", {}) for n in picked}


def build(name: str, kind: str) -> Any:
    if kind == "timm":
        import timm

        model = timm.create_model(name.removeprefix("timm/"), pretrained=False)
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))
        return model, {"x": torch.randn(1, *size)}
    import torchvision

    torch.manual_seed(0)
    kwargs: dict[str, Any] = {"weights": None}
    if kind in ("detection", "segmentation"):  # (else the backbone's weights are downloaded)
        kwargs["weights_backbone"] = None
    if name in ("googlenet", "inception_v3"):
        kwargs["init_weights"] = False
    return torchvision.models.get_model(name, **kwargs), None


def one(name: str, kind: str, inputs: dict[str, Any] | None, full: bool = False) -> tuple[str, float, list[str]]:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(2)
    from judge import judge

    start = time.perf_counter()
    try:
        torch.manual_seed(0)
        model, made = build(name, kind)
        x = made if made is not None else inputs
        assert x is not None
        if FIRST in x:
            first = next(iter(inspect.signature(model.forward).parameters))
            x = {first if k == FIRST else k: v for k, v in x.items()}
        real = _real_device()
        devices = (real,) if kind in VALUES else (real, "meta")
        problems = judge(model, x, devices, run_on=None if real == "cpu" else real)
        if full:
            problems += outputs(model, x, real)
    except Exception as e:  # noqa: BLE001 - a model this sweep could not build: reported
        problems = [f"setup: {type(e).__name__}: {str(e)[:200]}"]
    return name, time.perf_counter() - start, problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="only these models")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--timm", type=int, default=1000, help="at most this many timm families")
    ap.add_argument("--out", help="also write the lines here")
    ap.add_argument("--full", action="store_true", help="also the drawings, the viewer page, JSON and tv.summary")
    opts = ap.parse_args()
    cases = {**torchvision_cases(), **timm_cases(opts.timm)}
    if opts.names:
        cases = {n: c for n, c in cases.items() if n in opts.names}
    lines: list[str] = []
    bad = 0
    ctx = multiprocessing.get_context("spawn")
    with futures.ProcessPoolExecutor(opts.workers, mp_context=ctx) as pool:
        jobs = [pool.submit(one, n, kind, x, opts.full) for n, (kind, x) in cases.items()]
        for job in futures.as_completed(jobs):
            name, secs, problems = job.result()
            bad += any(not p.startswith(PLAIN_FAILS) for p in problems)
            lines.append(f"{name:40s} {secs:6.1f}s  {' | '.join(problems) if problems else 'ok'}")
            print(lines[-1], flush=True)
            if opts.out:
                with open(opts.out, "w") as f:
                    f.write("\n".join(sorted(lines)) + "\n")
    print(f"{len(cases)} models, {bad} with problems not the model's own", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

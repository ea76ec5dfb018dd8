"""Fingerprints of everything tensorview outputs, to prove a refactor changed nothing.

    python bench/snapshot.py > before.json      # on the old tree
    python bench/snapshot.py > after.json       # on the new tree
    diff before.json after.json                 # empty: byte-identical output

For every model of the fixture zoo and of the transformers tier (CPU, and meta where the
tier records on meta): a SHA-256 of ``to_json()`` (the full graph), of the DOT source and of
the view JSON at several view options, and of ``table()`` and ``repr()``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from typing import Any

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

VIEWS: list[dict[str, Any]] = [
    {},
    {"depth": 1},
    {"depth": 2, "expand_nested": True},
    {"depth": 99, "hide_inner_tensors": False, "roll": True},
    {"fold": True, "show_params": True, "number_nodes": True},
]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(graph: Any) -> dict[str, str]:
    from tensorview.render import JsonRenderer

    out = {
        "to_json": digest(json.dumps(graph.to_json(), sort_keys=False)),
        "table": digest(graph.table()),
        "repr": digest(repr(graph)),
    }
    for k, opts in enumerate(VIEWS):
        v = graph.view(**opts)
        out[f"dot{k}"] = digest(v.source)
        out[f"view{k}"] = digest(JsonRenderer().render(v.get_view(), getattr(v, "render_options", None)))
    return out


def record(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    import tensorview as tv

    with torch.no_grad(), tv.Recorder(model) as rec:
        model(*args, **kwargs)
    return rec.graph


def main() -> None:
    warnings.simplefilter("ignore")
    from tests.fixtures.models import ZOO

    result: dict[str, Any] = {}
    for name, (make, inputs) in ZOO.items():
        torch.manual_seed(0)
        model = make().eval()
        args, kwargs = inputs()
        result[f"zoo/{name}"] = fingerprint(record(model, args, kwargs))
    try:
        from tests.test_transformers_tier import ARCHS, build
    except ImportError:  # transformers missing
        ARCHS = []
    for arch in ARCHS:
        for device in ("cpu", "meta"):
            if device == "meta" and arch.no_meta:
                continue
            extra = arch.meta_build if device == "meta" else {}
            model = build(arch, device, **extra)
            torch.manual_seed(0)
            inputs = arch.inputs(device)
            result[f"hf/{arch.model_type}/{device}"] = fingerprint(record(model, (), inputs))
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()

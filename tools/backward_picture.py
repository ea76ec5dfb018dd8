"""Draw the picture of the backward pass in the README and docs/backward.md
(docs/images/backward.svg).

    python tools/backward_picture.py        # needs Graphviz dot
"""

from __future__ import annotations

from pathlib import Path

from torch import nn

import tensorview as tv

OUT = Path(__file__).resolve().parent.parent / "docs" / "images" / "backward.svg"


def main() -> None:
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
    graph = tv.draw_graph(model, input_size=(4, 6), device="meta", backward=True)
    graph.view(hide_module_functions=False, show_params=True, graph_dir="LR").save(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

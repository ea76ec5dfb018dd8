"""The command line's grammar: ``tensorview draw|summary TARGET [options]``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from .._version import __version__
from ..render import GRAPH_DIRS, LAYOUTS
from ..render.themes import STYLES
from . import values
from .targets import FORMS
from .values import UsageError

DESCRIPTION = "Draw a PyTorch model's forward pass as a graph, from the shell (no weights needed)."
EXAMPLES = """examples:
  tensorview draw hf:llama --config num_hidden_layers=80,hidden_size=8192 -o llama.svg
  tensorview draw hf:path/to/config.json --seq-len 128 -o model.json
  tensorview draw torchvision:resnet50 --input-size 1,3,224,224 --depth 2 -o resnet50.pdf
  tensorview draw my_project/models.py:build_model --kwargs width=64 --input-size 1,3,32,32 -o net.png
  tensorview summary hf:mixtral --config num_hidden_layers=4
  tensorview diff hf:llama hf:mistral --config num_hidden_layers=2 -o diff.svg
  tensorview fingerprint my_project/models.py:build_model --input-size 1,3,32,32

exit status: 0 ok, 1 the model failed (import, build, record, draw), 2 bad usage or missing package
(diff: 0 identical, 1 different)
"""


class Parser(argparse.ArgumentParser):
    """Usage errors raise ``UsageError`` (``main`` prints them and exits with 2), so the
    parser can also serve the Sphinx directive without exiting the process."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def argtype(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse ``type`` whose ``UsageError`` message is shown as is."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except UsageError as e:
            raise argparse.ArgumentTypeError(str(e)) from e

    convert.__name__ = parse.__name__
    return convert


def build_parser() -> Parser:
    parser = Parser(
        prog="tensorview",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tensorview {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True
    draw = commands.add_parser(
        "draw", help="record the model and write a drawing (svg, png, pdf, gv, json...)", description=DESCRIPTION
    )
    summary = commands.add_parser("summary", help="print the cost table: parameters, FLOPs, memory per module")
    for sub in (draw, summary):
        add_target_options(sub)
        add_general_options(sub)
    add_view_options(draw)
    from .diffcmd import add_parsers  # tensorview diff, tensorview fingerprint

    add_parsers(commands, add_target_options, add_general_options)
    draw.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="output file; its extension picks the format "
        "(svg, png, pdf, gv/dot, json...; default: <target name>.svg); '-' writes to stdout",
    )
    draw.add_argument("--format", metavar="EXT", help="the format when the extension does not say it (svg, gv...)")
    summary.add_argument("-o", "--output", metavar="PATH", help="write the summary as JSON to PATH (default: print)")
    summary.add_argument("--depth", type=argtype(values.depth), help="deepest module level in the table")
    return parser


def add_target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="TARGET", help=f"what to draw: {FORMS}")
    g = p.add_argument_group("model")
    g.add_argument(
        "--kwargs",
        action="append",
        metavar="K=V,...",
        help="arguments for the class or factory, Python literals (width=64,sizes=[8,16])",
    )
    g.add_argument("--config", action="append", metavar="K=V,...", help="hf: config settings (num_hidden_layers=4)")
    g.add_argument(
        "--task",
        metavar="TASK",
        help="hf: model head: base (AutoModel, default), causal-lm, masked-lm, "
        "seq2seq-lm, sequence-classification, image-classification..., or an Auto class name",
    )
    g = p.add_argument_group("inputs")
    g.add_argument(
        "--input-size",
        action="append",
        type=argtype(values.parse_input),
        metavar="[NAME=]SHAPE[:DTYPE]",
        help="an input's shape, e.g. 1,3,224,224 or 1x128:long or input_ids=1x128:long; repeat for "
        "several inputs (default: token ids or pixel values for hf/timm/torchvision targets)",
    )
    g.add_argument("--seq-len", type=argtype(values.positive), default=128, help="tokens of default text inputs (128)")
    g.add_argument("--batch-size", type=argtype(values.positive), default=1, help="batch of default inputs (1)")
    g.add_argument("--device", default="meta", help="where to record: meta (default: shapes only, no memory), cpu...")
    g.add_argument("--mode", choices=("eval", "train"), default="eval", help="module mode while recording (eval)")


def add_general_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("messages")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress lines or hints on stderr")
    g.add_argument("-v", "--verbose", action="store_true", help="a line for every step, also fast ones")
    g.add_argument("--debug", action="store_true", help="show the traceback of an error")


def add_view_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("view (draw_graph's options)")
    g.add_argument(
        "--depth",
        type=argtype(values.depth),
        default=3,
        help="module calls at this depth are boxes, deeper ones hidden (3)",
    )
    g.add_argument("--expand-nested", action="store_true", help="dashed boxes around opened modules")
    g.add_argument("--roll", action="store_true", help="merge repeated calls of one module")
    g.add_argument(
        "--fold",
        type=argtype(values.fold),
        default="auto",
        metavar="{auto,true,false}",
        help="fold runs of identical sibling calls into one xN box (auto: on big views)",
    )
    g.add_argument("--show-params", action="store_true", help="parameter and buffer nodes")
    g.add_argument("--no-shapes", dest="show_shapes", action="store_false", help="no shapes on the nodes")
    g.add_argument(
        "--hide-inner-tensors",
        dest="hide_inner_tensors",
        action="store_true",
        default=True,
        help="show only input, output and created tensors (default)",
    )
    g.add_argument(
        "--show-inner-tensors", dest="hide_inner_tensors", action="store_false", help="show every tensor between ops"
    )
    g.add_argument(
        "--show-module-functions",
        dest="hide_module_functions",
        action="store_false",
        help="open torch.nn leaf modules (Linear, Conv2d) to their ops",
    )
    g.add_argument("--graph-dir", choices=GRAPH_DIRS, default="TB", help="direction of the flow (TB)")
    g.add_argument("--graph-name", default=None, help="the drawing's name (default: the target's name)")
    g.add_argument("--number-nodes", action="store_true", help="prefix labels with the execution position")
    g.add_argument(
        "--layout", choices=LAYOUTS, default="auto", help="auto bounds Graphviz's work on big views; exact never does"
    )
    g.add_argument(
        "--style",
        choices=tuple(STYLES),
        default="default",
        help="look: default, paper (serif, grayscale-safe, thin lines) or dark",
    )


#: ``draw_graph`` view options, set from the parsed namespace
VIEW_OPTIONS = (
    "depth",
    "expand_nested",
    "hide_inner_tensors",
    "hide_module_functions",
    "roll",
    "show_shapes",
    "show_params",
    "fold",
)

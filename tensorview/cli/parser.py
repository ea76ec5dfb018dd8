"""The command line's grammar: ``tensorview draw|summary TARGET [options]``."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
from collections.abc import Callable
from typing import Any, NoReturn

from .._version import __version__
from ..graph import ViewOptions
from ..render import GRAPH_DIRS, LAYOUTS
from ..render.themes import STYLES
from . import values
from .values import FORMS, UsageError

DESCRIPTION = "Draw a PyTorch model's forward pass as a graph, from the shell (no weights needed)."
EXAMPLES = """examples:
  tensorview draw hf:llama --config num_hidden_layers=80,hidden_size=8192 -o llama.svg
  tensorview draw hf:path/to/config.json --seq-len 128 -o model.json
  tensorview draw torchvision:resnet50 --input-size 1,3,224,224 --depth 2 -o resnet50.pdf
  tensorview draw my_project/models.py:build_model --kwargs width=64 --input-size 1,3,32,32 -o net.png
  tensorview summary hf:mixtral --config num_hidden_layers=4
  tensorview memory hf:llama --config num_hidden_layers=2 --batch 8 --seq-len 4096 --budget 80GiB
  tensorview diff hf:llama hf:mistral --config num_hidden_layers=2 -o diff.svg
  tensorview fingerprint my_project/models.py:build_model --input-size 1,3,32,32

exit status: 0 ok, 1 the model failed (import, build, record, draw), 2 bad usage or missing package
(diff: 0 identical, 1 different)
"""


class Parser(argparse.ArgumentParser):
    """Usage errors raise ``UsageError`` (``main`` prints them and exits with 2), so the
    parser can also serve the Sphinx directive without exiting the process.  A mistyped
    option gets the closest ones of its command ("did you mean --depth?").  Building and
    parsing import no torch (``tensorview --help`` answers at once): ``--input-size``'s
    and ``--autocast``'s dtypes are read last (``AFTER_PARSING``), once every other argument
    is known to be right."""

    commands: dict[str, argparse.ArgumentParser]

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        ns, extras = self.parse_known_args(args, namespace)
        command = getattr(self, "commands", {}).get(getattr(ns, "command", None) or "", self)
        if extras:
            known = [o for a in command._actions for o in a.option_strings]
            guesses = [
                f"did you mean {close[0]}?"
                for e in extras
                if e.startswith("--")
                for close in [difflib.get_close_matches(e.partition("=")[0], known, n=1, cutoff=0.6)]
                if close
            ]
            hint = f" ({'; '.join(guesses)})" if guesses else ""
            command.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        for dest, (option, read) in AFTER_PARSING.items():
            value = getattr(ns, dest, None)
            if value is None:
                continue
            try:
                setattr(ns, dest, [read(v) for v in value] if isinstance(value, list) else read(value))
            except UsageError as e:
                command.error(f"argument {option}: {e}")
        return ns


def argtype(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse ``type`` whose ``UsageError`` message is shown as is."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except UsageError as e:
            raise argparse.ArgumentTypeError(str(e)) from e

    convert.__name__ = parse.__name__
    return convert


#: values read with torch once the rest is parsed: dest -> (option, reader of one value);
#: their argparse ``type`` checks what it can without torch
AFTER_PARSING: dict[str, tuple[str, Callable[[str], Any]]] = {
    "input_size": ("--input-size", values.parse_input),
    "autocast": ("--autocast", values.autocast),
}


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
    memory = commands.add_parser(
        "memory", help="the memory of a training step: peak, phases, per module; --budget: the largest batch that fits"
    )
    parser.commands = {"draw": draw, "summary": summary, "memory": memory}
    for sub in (draw, summary, memory):
        add_target_options(sub)
        add_general_options(sub)
    add_memory_options(memory)
    add_view_options(draw)
    from .diffargs import add_parsers  # tensorview diff, tensorview fingerprint

    parser.commands.update(add_parsers(commands, add_target_options, add_general_options))
    draw.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="output file; its extension picks the format "
        "(svg, png, pdf, gv/dot, json...; default: <target name>.svg); '-' writes to stdout",
    )
    draw.add_argument("--format", metavar="EXT", help="the format when the extension does not say it (svg, gv...)")
    summary.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        type=argtype(values.summary_output),
        help="write the summary to PATH: .json (its to_dict()) or .txt (the table); default: print",
    )
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
        type=argtype(values.input_text),
        metavar="[NAME=]SHAPE[:DTYPE]",
        help="an input's shape, e.g. 1,3,224,224 or 1x128:long or input_ids=1x128:long; repeat for "
        "several inputs (default: token ids or pixel values for hf/timm/torchvision targets)",
    )
    g.add_argument("--seq-len", type=argtype(values.positive), default=128, help="tokens of default text inputs (128)")
    g.add_argument(
        "--batch-size", "--batch", type=argtype(values.positive), default=1, help="batch of default inputs (1)"
    )
    g.add_argument("--device", default="meta", help="where to record: meta (default: shapes only, no memory), cpu...")
    g.add_argument("--mode", choices=("eval", "train"), default="eval", help="module mode while recording (eval)")


def add_memory_options(p: argparse.ArgumentParser) -> None:
    p.set_defaults(mode="train")
    g = p.add_argument_group("training step (tensorview.memory's options)")
    g.add_argument("--optimizer", default="adam", help="adam (default), adamw, sgd, sgd_momentum, adafactor... or none")
    g.add_argument("--autocast", metavar="DTYPE", help="mixed precision: bfloat16, float16")
    g.add_argument("--checkpointing", action="append", metavar="PATH,...", help="modules to checkpoint (model.layers)")
    g.add_argument("--steps", type=argtype(values.positive), default=1, help="training steps in a row (1)")
    g.add_argument("--accumulate", type=argtype(values.positive), default=1, help="micro-batches per step (1)")
    g.add_argument("--keep-grads", action="store_true", help="zero_grad(set_to_none=False): gradients stay allocated")
    g.add_argument(
        "--budget", metavar="SIZE", help="memory to fit in (80GiB, 24GB): prints the largest batch that fits"
    )
    g.add_argument("--depth", type=argtype(values.depth), default=2, help="deepest module level in the table (2)")
    g.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="write the timeline to PATH: a picture (mem.svg) or an interactive page (mem.html)",
    )


def add_general_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("messages")
    one = g.add_mutually_exclusive_group()
    one.add_argument("-q", "--quiet", action="store_true", help="no progress lines or hints on stderr")
    one.add_argument("-v", "--verbose", action="store_true", help="a line for every step, also fast ones")
    g.add_argument("--debug", action="store_true", help="show the traceback of an error")


#: the flags of each ``ViewOptions`` field (graph/view.py): ``(flags, argparse keywords)``;
#: the default is the field's.  ``add_view_options`` refuses a field missing here, so a new
#: view option cannot be left without a flag (tests/test_cli_options.py checks it too)
VIEW_FLAGS: dict[str, list[tuple[tuple[str, ...], dict[str, Any]]]] = {
    "depth": [
        (
            ("--depth",),
            {"type": argtype(values.depth), "help": "module calls at this depth are boxes, deeper ones hidden"},
        )
    ],
    "expand_nested": [(("--expand-nested",), {"action": "store_true", "help": "dashed boxes around opened modules"})],
    "hide_inner_tensors": [
        (
            ("--hide-inner-tensors",),
            {"action": "store_true", "help": "show only input, output and created tensors (default)"},
        ),
        (("--show-inner-tensors",), {"action": "store_false", "help": "show every tensor between ops"}),
    ],
    "hide_module_functions": [
        (
            ("--show-module-functions",),
            {"action": "store_false", "help": "open torch.nn leaf modules (Linear, Conv2d) to their ops"},
        )
    ],
    "roll": [(("--roll",), {"action": "store_true", "help": "merge repeated calls of one module"})],
    "show_shapes": [(("--no-shapes",), {"action": "store_false", "help": "no shapes on the nodes"})],
    "show_params": [(("--show-params",), {"action": "store_true", "help": "parameter and buffer nodes"})],
    "fold": [
        (
            ("--fold",),
            {
                "type": argtype(values.fold),
                "metavar": "{auto,true,false}",
                "help": "fold runs of identical sibling calls into one xN box (auto: on big views)",
            },
        )
    ],
    "open_folds": [
        (
            ("--open-folds",),
            {
                "type": argtype(values.open_folds),
                "nargs": "?",
                "const": True,
                "metavar": "N",
                "help": "draw each fold opened on one repeat: the first, or the N-th (negative: from the end)",
            },
        )
    ],
}


def add_view_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("view (draw_graph's options)")
    for field in dataclasses.fields(ViewOptions):
        flags = VIEW_FLAGS.get(field.name)
        if flags is None:
            raise AssertionError(
                f"ViewOptions.{field.name} has no command-line flag: add it to cli/parser.py VIEW_FLAGS"
            )
        for names, kwargs in flags:
            default = f" ({field.default})" if kwargs.get("action") is None else ""
            kwargs = {**kwargs, "help": kwargs["help"] + default}
            g.add_argument(*names, dest=field.name, default=field.default, **kwargs)
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


#: ``draw_graph`` view options, set from the parsed namespace: every field of ``ViewOptions``
VIEW_OPTIONS = tuple(f.name for f in dataclasses.fields(ViewOptions))

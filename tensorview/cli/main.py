"""``main(argv)``: parse, run the command, turn errors into messages and exit statuses
(0 ok, 1 the model failed, 2 bad usage or a missing package; 130 interrupted).  Errors
are one message on stderr; ``--debug`` adds the traceback.

The command line is parsed before torch is imported: ``--help``, ``--version`` and usage
errors answer at once; ``commands`` (and torch with it) loads for a command that runs."""

from __future__ import annotations

import importlib
import re
import sys
import traceback
from collections.abc import Sequence

from ..errors import InvalidInputError, InvalidTypeError, RecordingError, RenderError
from .parser import build_parser
from .progress import Progress
from .values import ModelError, UsageError

#: what a forward that cannot run on meta says (a shape error is not one of them)
META_TROUBLE = re.compile(r"meta|item\(\)|data.dependent|NotImplemented|no data", re.I)
OK, MODEL_ERROR, USAGE_ERROR, INTERRUPTED = 0, 1, 2, 130
#: command -> (module of cli/, function), imported once the command line is parsed
COMMANDS = {
    "draw": ("commands", "draw"),
    "summary": ("commands", "summary"),
    "memory": ("memory", "memory"),
    "diff": ("diffcmd", "run_diff"),
    "fingerprint": ("diffcmd", "run_fingerprint"),
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    device = _device(args)
    try:
        ns = build_parser().parse_args(args)
        progress = Progress(quiet=ns.quiet, verbose=ns.verbose)
        module, function = COMMANDS[ns.command]  # torch and the recorder load here, after parsing
        return int(getattr(importlib.import_module(f".{module}", __package__), function)(ns, progress))
    except KeyboardInterrupt:
        _fail("interrupted", debug)
        return INTERRUPTED
    except RecordingError as e:  # before the ValueError family: it may be one too
        hint = ""
        if device == "meta" and META_TROUBLE.search(str(e)):
            hint = (
                "\n(recorded on meta, where tensors hold no values: if the model reads values "
                "(.item(), data-dependent branches), try --device cpu)"
            )
        _fail(f"{e}{hint}", debug)
        return MODEL_ERROR
    except (UsageError, InvalidInputError, InvalidTypeError) as e:
        _fail(str(e), debug)
        return USAGE_ERROR
    except (ModelError, RenderError) as e:
        _fail(str(e), debug)
        return MODEL_ERROR
    except Exception as e:  # noqa: BLE001 - a command line reports every failure as a message
        _fail(f"unexpected {type(e).__name__}: {e} (run again with --debug for the traceback)", debug)
        return MODEL_ERROR


def _device(args: list[str]) -> str:
    for i, a in enumerate(args):
        if a == "--device" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--device="):
            return a.partition("=")[2]
    return "meta"


def _fail(message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    print(f"tensorview: error: {message}", file=sys.stderr, flush=True)

"""Parsing what the command line says: ``key=value,...`` lists, Python literals, input
shapes with dtypes (``1x128:long``, ``1,3,224,224``, ``input_ids=1x128:long``).

>>> parse_pairs("width=64,sizes=[8, 16],act=relu,bias=false", "--kwargs")
{'width': 64, 'sizes': [8, 16], 'act': 'relu', 'bias': False}
>>> parse_input("1x128:long")
InputSpec(shape=(1, 128), dtype=torch.int64, name=None)
>>> parse_input("pixel_values=1,3,32,32")
InputSpec(shape=(1, 3, 32, 32), dtype=None, name='pixel_values')

Nothing here imports torch before a dtype is read (``parse_dtype``): the parser builds
from this module, and ``tensorview --help`` and usage errors answer without torch.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import TensorviewError

if TYPE_CHECKING:
    import torch


class UsageError(TensorviewError, ValueError):
    """What was typed cannot work (a bad option value, an unknown target, a package to
    install): exit status 2."""


class ModelError(TensorviewError, RuntimeError):
    """The model could not be imported, built, recorded or drawn: exit status 1."""


#: target prefixes other than Python code (targets.py builds them)
FAMILIES = ("hf", "timm", "torchvision")
#: what a target may be, for help and error messages
FORMS = (
    "path/to/file.py:NAME, package.module:NAME, hf:<model_type>, hf:<path/to/config.json>, "
    "timm:<name>, torchvision:<name>"
)
#: lower-case words people type for Python's constants
WORDS = {"true": True, "false": False, "none": None, "null": None}
#: dtype names besides torch's own (``float32``, ``int64``, ``bfloat16``...)
DTYPE_ALIASES = {"long": "int64", "int": "int32", "float": "float32", "half": "float16"}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and quotes (``a=[1,2],b='x,y'`` is two)."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_literal(text: str) -> Any:
    """A Python literal (``64``, ``[8, 16]``, ``'gelu'``, ``True``; also ``true``/``null``);
    anything that is not one is the string itself (``relu``)."""
    text = text.strip()
    if text.lower() in WORDS:
        return WORDS[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def parse_pairs(text: str, option: str) -> dict[str, Any]:
    """``key=value,...`` as a dict, values parsed by ``parse_literal``."""
    out: dict[str, Any] = {}
    for item in split_top(text):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not IDENTIFIER.match(key):
            raise UsageError(
                f"bad {option} item {item!r}: expected key=value pairs separated by commas, "
                "such as width=64,depth=2 (values are Python literals: 64, 0.1, [8, 16], 'gelu', true)"
            )
        out[key] = parse_literal(value)
    return out


def merge_pairs(texts: list[str] | None, option: str) -> dict[str, Any]:
    """Every ``option`` given (it may be repeated), later keys winning."""
    out: dict[str, Any] = {}
    for text in texts or ():
        out.update(parse_pairs(text, option))
    return out


@dataclass(frozen=True)
class InputSpec:
    """One input tensor to make: its shape, dtype (``None``: the family's default, else
    float32) and the ``forward`` keyword it is passed as (``None``: positional)."""

    shape: tuple[int, ...]
    dtype: torch.dtype | None = None
    name: str | None = None


def parse_dtype(text: str, where: str) -> torch.dtype:
    import torch

    name = text.strip().lower().removeprefix("torch.")
    dtype = getattr(torch, DTYPE_ALIASES.get(name, name), None)
    if not isinstance(dtype, torch.dtype):
        raise UsageError(
            f"unknown dtype {text!r} in {where}: use a torch dtype name such as long, int32, "
            "float32, float16, bfloat16, bool"
        )
    return dtype


def parse_input(text: str) -> InputSpec:
    """``[NAME=]SHAPE[:DTYPE]``; the shape's sizes are separated by ``x`` or ``,``."""
    name, shape, dtype_text = split_input(text)
    dtype = parse_dtype(dtype_text, f"--input-size {text!r}") if dtype_text else None
    return InputSpec(shape, dtype, name)


def input_text(text: str) -> str:
    """An argparse type: ``text`` when ``parse_input`` can read its shape and name (the
    dtype is read after parsing, with torch: ``parser.Parser.parse_args``)."""
    split_input(text)
    return text


def split_input(text: str) -> tuple[str | None, tuple[int, ...], str]:
    """``(name, shape, dtype text)`` of ``[NAME=]SHAPE[:DTYPE]``, read without torch."""
    where = f"--input-size {text!r}"
    name: str | None = None
    body = text.strip()
    if "=" in body:
        name, _, body = body.partition("=")
        name = name.strip()
        if not IDENTIFIER.match(name):
            raise UsageError(f"bad input name {name!r} in {where}: expected a forward argument name such as input_ids")
    shape_text, _, dtype_text = body.partition(":")
    sizes = [s for s in re.split(r"[x,X*\s]+", shape_text.strip().strip("()[]")) if s]
    if not sizes or not all(s.isdigit() for s in sizes):
        raise UsageError(
            f"bad shape in {where}: expected sizes separated by x or commas, optionally a dtype, "
            "such as 1,3,224,224 or 1x128:long or input_ids=1x128:long"
        )
    return name, tuple(int(s) for s in sizes), dtype_text.strip()


def autocast(text: str) -> torch.dtype:
    """A floating dtype for ``--autocast`` (``bf16`` and ``fp16`` too)."""
    dtype = parse_dtype({"bf16": "bfloat16", "fp16": "float16"}.get(text, text), "--autocast")
    if not dtype.is_floating_point:
        raise UsageError(f"--autocast {text!r}: a floating dtype is needed (bfloat16, float16)")
    return dtype


def positive(text: str) -> int:
    """An argparse type: an integer >= 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def depth(text: str) -> int:
    """An argparse type: an integer >= 0."""
    if not text.strip().isdigit():
        raise UsageError(f"bad depth {text!r}: expected a whole number >= 0 (0 draws the whole model as one box)")
    return int(text)


FOLD_VALUES: dict[str, bool | str] = {
    "auto": "auto",
    "true": True,
    "false": False,
    "yes": True,
    "no": False,
    "on": True,
    "off": False,
}


def open_folds(text: str) -> bool | int:
    """An argparse type: which repeat of each fold is drawn opened (an int, negative from
    the end), or true/false."""
    value = FOLD_VALUES.get(text.strip().lower())
    if isinstance(value, bool):
        return value
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"bad open-folds {text!r}: expected the index of a repeat (0, 2, -1), true or false") from None


def summary_output(text: str) -> str:
    """An argparse type: where ``summary -o`` writes, a .json or .txt file."""
    ext = text.rpartition(".")[2].lower() if "." in text.rpartition("/")[2] else ""
    if ext not in ("json", "txt"):
        raise UsageError(f"bad summary output {text!r}: expected a .json file (the data) or a .txt file (the table)")
    return text


def fold(text: str) -> bool | str:
    """An argparse type: ``auto``, ``true`` or ``false``."""
    value = FOLD_VALUES.get(text.strip().lower())
    if value is None:
        raise UsageError(f"bad fold {text!r}: expected auto, true or false")
    return value

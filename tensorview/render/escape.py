"""DOT quoting and attribute lists: the one place where text becomes DOT syntax (and,
``file_name``, where a name becomes a file name).

Names are user data (a model built from an untrusted config can name its modules
anything), so everything that reaches ``dot`` here is made safe for DOT and for the SVG
that ``dot`` writes from it: characters XML cannot carry become visible escapes, ``&``
is written as the entity ``&amp;`` (Graphviz reads entities in text), attribute values
that Graphviz copies verbatim into SVG lose the characters that would break out of an
XML attribute, very long label lines are shortened (the full text goes into
``tooltip``), and very long strings are split over continuation lines (DOT's scanner
rejects a quoted run of more than 16384 bytes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..graph.listing import MAX_TEXT, shorten

_ID = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))\Z")
_KEYWORDS = frozenset({"node", "edge", "graph", "digraph", "subgraph", "strict"})
#: characters that XML 1.0 cannot carry (control characters other than tab, line feed and
#: carriage return, lone surrogates, U+FFFE, U+FFFF; NUL also ends dot's strings), plus DEL
#: and the C1 controls, so that they are seen
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
#: a quoted string is split over continuation lines every this many characters
_CHUNK = 2000
#: attributes whose text Graphviz escapes itself when it writes SVG
_TEXT_ATTRS = frozenset(
    {
        "label",
        "xlabel",
        "headlabel",
        "taillabel",
        "tooltip",
        "labeltooltip",
        "edgetooltip",
        "headtooltip",
        "tailtooltip",
        "comment",
    }
)
#: in URL attributes these are percent-encoded; in the other non-text attributes (fontname,
#: colours: Graphviz 2.43 writes them into SVG verbatim) they are replaced by ``_``
_URL_UNSAFE = str.maketrans({'"': "%22", "<": "%3C", ">": "%3E"})
_VALUE_UNSAFE = str.maketrans({'"': "_", "<": "_", ">": "_", "&": "_"})


def quote(text: str) -> str:
    """``text`` as a DOT ID: bare when it is a plain identifier or numeral, else double-quoted with
    backslashes, quotes and line breaks escaped (a line break becomes DOT's ``\\n``), ``&`` as
    ``&amp;``, characters XML cannot carry as visible escapes (``\\x00``), and text longer
    than 2000 characters split over continuation lines."""
    if _ID.match(text) and text.lower() not in _KEYWORDS and len(text) <= _CHUNK:
        return text
    if len(text) <= _CHUNK:
        return '"' + _escape(text) + '"'
    return '"' + "\\\n".join(_escape(text[i : i + _CHUNK]) for i in range(0, len(text), _CHUNK)) + '"'


def visible(text: str) -> str:
    """``text`` with the characters XML cannot carry (and DEL, the C1 controls) as visible
    escapes (``\\x00``, ``\\ud800``): the one rule for every output that becomes XML, DOT's
    SVG (``quote``) and the HTML viewer's data (html.py), whose SVG export then parses.

    >>> visible("a\\x01b")
    'a\\\\x01b'
    """
    if _UNSAFE.search(text):
        return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    return text


def _escape(text: str) -> str:
    # the escapes of ``visible`` first: their backslash is then doubled, so that dot shows
    # the escape (\x00) instead of reading it
    text = visible(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return text.replace("&", "&amp;")


def attr_list(attrs: Mapping[str, object]) -> str:
    """`` [k=v k2="v 2"]`` in insertion order, or ``""`` when empty; ``None`` values are skipped.
    A ``label`` with a line longer than ``MAX_TEXT`` characters is shortened with an ellipsis
    and its full text becomes the ``tooltip`` (unless one is given)."""
    attrs = _fit_label(attrs)
    parts = [f"{quote(str(k))}={quote(_value(str(k), _text(v)))}" for k, v in attrs.items() if v is not None]
    return " [" + " ".join(parts) + "]" if parts else ""


def _fit_label(attrs: Mapping[str, object]) -> Mapping[str, object]:
    label = attrs.get("label")
    if not isinstance(label, str) or len(label) <= MAX_TEXT:
        return attrs
    lines = label.split("\n")
    if all(len(line) <= MAX_TEXT for line in lines):
        return attrs
    out = dict(attrs)
    out["label"] = "\n".join(shorten(line) for line in lines)
    if out.get("tooltip") is None:
        out["tooltip"] = label
    return out


def _value(key: str, text: str) -> str:
    if key in _TEXT_ATTRS:
        return text
    if key.lower().endswith(("url", "href")) or key == "stylesheet":
        return text.translate(_URL_UNSAFE)
    return text.translate(_VALUE_UNSAFE)


def _text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


#: what a file name cannot hold on some system: path separators, control characters, the
#: characters Windows refuses
_NOT_IN_FILE_NAMES = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
)


def file_name(name: str, default: str = "model") -> str:
    """``name`` (a graph's or model's name: user data) as one file name that stays in the
    directory it is joined to: separators and characters file systems refuse become
    ``_``, no leading dots (``..``, hidden files), never empty, no Windows device name,
    at most 200 characters.

    >>> file_name("../../etc/passwd"), file_name(".."), file_name("resnet-50")
    ('_.._etc_passwd', 'model', 'resnet-50')
    """
    safe = _NOT_IN_FILE_NAMES.sub("_", name).lstrip(". ")[:200].rstrip(". ")
    if not safe:
        return default
    if safe.split(".")[0].lower() in _WINDOWS_DEVICES:
        safe = "_" + safe
    return safe

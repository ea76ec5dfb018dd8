"""A Sphinx extension: ``.. tensorview:: TARGET`` draws a model when the docs are built.

In ``conf.py``: ``extensions = ["tensorview.sphinx"]``; in a page::

    .. tensorview:: my_project.models:build_model
       :input-size: 1,3,32,32
       :depth: 2
       :format: svg
       :caption: The model, two levels deep.

``TARGET`` and the options are those of ``tensorview draw`` (docs/cli.md): every long
option of the command is an option of the directive (``:kwargs: width=64``,
``:config: num_hidden_layers=4``, ``:expand-nested:``, ``:style: paper``; several
``:input-size:`` shapes separated by spaces), plus the image options ``:alt:``,
``:width:``, ``:height:``, ``:scale:``, ``:align:``, ``:class:`` and ``:caption:``.  File
targets are relative to the page (``/`` starts at the source folder).  Without
``:format:`` the builder's first choice among svg, pdf and png is used; ``:format: html``
embeds the interactive viewer (HTML builders only; ``:height:`` in pixels, default 640).
Other formats (json, gv) are not figures: an error names the ones allowed.

Drawings are cached under the doctree folder (``<doctreedir>/tensorview``), keyed by a
hash of the target's source (the model's module file, the config file, or the version of
transformers/timm/torchvision), the options and the tensorview version: rebuilding the
docs does not record unchanged models again.  The page depends on the model's source,
so editing it makes Sphinx re-read the page and draw it anew.  ``tensorview_defaults``
in ``conf.py`` (a dict such as ``{"style": "paper"}``) gives options to every figure.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ._version import __version__
from .cli import commands
from .cli.parser import build_parser
from .cli.progress import Progress
from .cli.targets import module_file, sources_of, split_target
from .errors import TensorviewError

#: command-line options that make no sense in a document
SKIP = {"help", "output", "quiet", "verbose", "debug"}
IMAGE_OPTIONS = ("alt", "width", "height", "scale", "align", "class")
#: formats tried in order when ``:format:`` is not given
PREFERRED = (("svg", "image/svg+xml"), ("pdf", "application/pdf"), ("png", "image/png"))
#: what a figure can be: an image, or the interactive viewer embedded in an HTML page
FIGURE_FORMATS = ("svg", "png", "pdf", "html")


def _draw_actions() -> dict[str, argparse.Action]:
    """``option name -> argparse action`` of ``tensorview draw``."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    draw = sub.choices["draw"]
    found = {}
    for action in draw._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and longs[0][2:] not in SKIP:
            found[longs[0][2:]] = action
    return found


ACTIONS = _draw_actions()


def _option_type(action: argparse.Action) -> Any:
    """How the directive reads an option: a flag, a value, or (``:open-folds:``) either."""
    if action.nargs == 0:
        return directives.flag
    return directives.unchanged if action.nargs == "?" else directives.unchanged_required


class TensorviewDirective(SphinxDirective):
    """``.. tensorview:: TARGET`` with ``tensorview draw``'s options (see the module doc)."""

    required_arguments = 1
    has_content = False
    option_spec: ClassVar[dict[str, Any]] = {
        **{name: _option_type(a) for name, a in ACTIONS.items()},
        "alt": directives.unchanged,
        "width": directives.length_or_percentage_or_unitless,
        "height": directives.length_or_unitless,
        "scale": directives.percentage,
        "align": lambda arg: directives.choice(arg, ("left", "center", "right")),
        "class": directives.class_option,
        "caption": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        options = {**self.config.tensorview_defaults, **self.options}
        target = self._target(self.arguments[0])
        argv = self._argv(target, options)
        try:
            ns = build_parser().parse_args(argv)
            fmt = commands.output_format(ns)
            sources = sources_of(target)
        except TensorviewError as e:
            raise self.error(f"tensorview: {e}") from e
        if fmt.name not in FIGURE_FORMATS:
            raise self.error(
                f"tensorview: :format: {options['format']!r} is not a figure (must be one of "
                f"{list(FIGURE_FORMATS)}: an image, or html for the interactive viewer)"
            )
        builder = getattr(self.env, "tensorview_builder_format", "html")
        if fmt.name == "html" and builder != "html":
            raise self.error(
                f"tensorview: :format: html (the interactive viewer) needs an HTML builder, not {builder!r}"
            )
        for src in sources:
            if os.path.isfile(src):
                self.env.note_dependency(src)
        try:
            height = _pixels(options.get("height", "640")) if fmt.name == "html" else None
        except ValueError as e:
            raise self.error(str(e)) from e
        key = cache_key(argv + ([f"height={height}"] if height else []), sources)
        path = self._cache_dir() / f"tensorview-{key}.{fmt.extensions[0]}"
        if not path.exists():
            self._draw(ns, target, fmt, path, height)
        if height:
            return [nodes.raw("", _viewer_html(path.read_text(encoding="utf-8"), options), format="html")]
        return [self._figure(path, options)]

    def _target(self, spec: str) -> str:
        """File targets relative to the page (or to the source folder with a leading ``/``)."""
        kind, rest = split_target(spec)
        location, sep, name = rest.rpartition(":")
        if kind != "python" or not sep or not (location.endswith(".py") or "/" in location):
            return spec
        return f"{self.env.relfn2path(location, self.env.docname)[1]}:{name}"

    def _argv(self, target: str, options: dict[str, Any]) -> list[str]:
        argv = ["draw", target, "--quiet"]
        if "format" not in options:
            supported = getattr(self.env, "tensorview_image_types", ())
            argv += ["--format", next((ext for ext, mime in PREFERRED if mime in supported), "png")]
        for name in sorted(options):
            if name not in ACTIONS:
                continue
            value = options[name]
            if ACTIONS[name].nargs == 0 or (ACTIONS[name].nargs == "?" and not value):
                argv.append(f"--{name}")
            elif name == "input-size":
                for shape in str(value).split():
                    argv += ["--input-size", shape]
            else:
                argv += [f"--{name}", str(value)]
        return argv

    def _cache_dir(self) -> Path:
        folder = Path(self.env.doctreedir) / "tensorview"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _draw(self, ns: argparse.Namespace, target: str, fmt: Any, path: Path, height: int | None) -> None:
        kind, rest = split_target(target)
        location = rest.rpartition(":")[0]
        if kind == "python" and location in sys.modules and module_file(location):
            del sys.modules[location]  # its source changed (else the cache would have had it): import anew
        progress = Progress(quiet=True)
        try:
            built = commands.build_target(ns, progress)
            graph = commands.record(ns, built, progress)
            # html: the viewer with its library (each figure works alone)
            data: str | bytes = graph.interactive(height=height, library=True).html if height else graph.produce(fmt)
        except (TensorviewError, RuntimeError) as e:
            raise self.error(f"tensorview: drawing {target} failed: {e}") from e
        tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)  # whole files only, also with parallel readers

    def _figure(self, path: Path, options: dict[str, Any]) -> nodes.Node:
        uri = "/" + os.path.relpath(path, self.env.srcdir).replace(os.sep, "/")
        image = nodes.image(uri=uri, alt=options.get("alt", self.arguments[0]))
        for key in IMAGE_OPTIONS[1:]:
            if key in options:
                image["classes" if key == "class" else key] = options[key]
        if "caption" not in options:
            return image
        figure = nodes.figure("", image)
        figure += nodes.caption(options["caption"], options["caption"])
        if "align" in options:
            figure["align"] = options["align"]
        return figure


def _pixels(height: str) -> int:
    """The viewer's ``:height:`` (``640``, ``640px``) in pixels."""
    digits = str(height).strip().removesuffix("px")
    if not digits.isdigit() or int(digits) < 100:
        raise ValueError(f"tensorview: :height: of the viewer must be pixels >= 100 (such as 640px), got {height!r}")
    return int(digits)


def _viewer_html(viewer: str, options: dict[str, Any]) -> str:
    """The viewer as a figure: with its caption, when one is given."""
    caption = options.get("caption")
    if not caption:
        return f'<div class="tensorview-figure">\n{viewer}\n</div>'
    return f'<figure class="tensorview-figure">\n{viewer}\n<figcaption>{html.escape(caption)}</figcaption>\n</figure>'


def cache_key(argv: list[str], sources: list[str]) -> str:
    """A hash of the options, the target's sources (file contents, or package versions)
    and the tensorview version."""
    digest = hashlib.sha256(json.dumps({"argv": argv, "tensorview": __version__}).encode())
    for src in sources:
        digest.update(src.encode())
        if os.path.isfile(src):
            digest.update(Path(src).read_bytes())
    return digest.hexdigest()[:20]


def _builder_inited(app: Sphinx) -> None:
    """Which image types the builder takes (directives see the environment, not the builder)."""
    app.env.tensorview_image_types = tuple(getattr(app.builder, "supported_image_types", ()))  # type: ignore[attr-defined]
    app.env.tensorview_builder_format = getattr(app.builder, "format", "")  # type: ignore[attr-defined]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("tensorview_defaults", {}, "env", types=[dict])
    app.connect("builder-inited", _builder_inited)
    app.add_directive("tensorview", TensorviewDirective)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}

"""What a notebook shows: a picture that needs no script, and the viewer where scripts run.

Notebook front-ends differ in what they render (docs/notebooks.md): an untrusted notebook
shows ``image/png`` and sanitised HTML but no ``image/svg+xml`` and no script; nbconvert's
sanitiser turns any markup of an HTML output into visible text; Colab and VS Code put each
output into its own iframe.  So a drawing is shown as two outputs:

1. the **picture**: ``image/svg+xml`` (scaled to the output's width) and ``image/png``
   (for untrusted notebooks, GitHub, sanitised HTML), with ``text/plain``;
2. the **viewer** (``text/html``): comments and one script, carrying everything it
   needs (html.py); where it starts, it hides the picture just before it (when both are in
   one document), and where no script may run it shows nothing.

``graph.interactive()`` displays both (``_ipython_display_``); ``draw_graph``'s own display
(drawing.py) is the picture.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError, InvalidTypeError, RenderError, shown
from .formats import Drawing, Format, formats, register
from .html import ENGINES, HEIGHT, NOTEBOOK_ENGINE, page, viewer_markup


def picture(d: Drawing) -> dict[str, str]:
    """The picture output's data: every picture format (formats.py: SVG scaled to the
    output, PNG) that can be made; empty where Graphviz is missing."""
    bundle: dict[str, str] = {}
    for fmt in formats():
        if fmt.display and fmt.picture and fmt.inline is not None:
            try:
                data = fmt.inline(d)
            except RenderError:
                continue
            bundle[fmt.mime] = data.decode("ascii") if isinstance(data, bytes) else data
    return bundle


def fragment(
    d: Drawing,
    *,
    library_: bool | None = None,
    height: int = HEIGHT,
    picture: bool = False,
    engine: str = NOTEBOOK_ENGINE,
) -> str:
    """The viewer as a notebook output: works on its own (``library_=False`` leaves the
    library out, for a page where another output of the same version has it);
    ``picture``: the output before it is its picture (hidden where the viewer starts);
    ``engine``: the layout engine it carries (html.py ``ENGINES``)."""
    _check(height, library_, engine)
    return viewer_markup(d, height=height, inline=True, library_=library_ is not False, picture=picture, engine=engine)


def _check(height: Any, library: Any, engine: Any = NOTEBOOK_ENGINE) -> None:
    if not isinstance(height, int) or isinstance(height, bool) or height < 100:
        raise InvalidInputError(f"height must be an int >= 100 (pixels), got {shown(height)}")
    if library is not None and not isinstance(library, bool):
        raise InvalidTypeError(f"library must be True, False or None, got {shown(library)}")
    if not isinstance(engine, str) or engine not in ENGINES:
        raise InvalidInputError(f"engine must be one of {sorted(ENGINES)}, got {shown(engine)}")


class Interactive:
    """The interactive viewer of a drawing as a notebook shows it: the picture, then the
    viewer (``_ipython_display_``); ``html`` is the viewer output's HTML
    (``graph.save("x.html")`` writes the standalone page)."""

    def __init__(
        self, drawing: Drawing, *, height: int = HEIGHT, library: bool | None = None, engine: str = NOTEBOOK_ENGINE
    ) -> None:
        _check(height, library, engine)
        self.drawing = drawing
        self.height = height
        self.library = library
        self.engine = engine

    @property
    def html(self) -> str:
        return fragment(self.drawing, library_=self.library, height=self.height, engine=self.engine)

    def _repr_html_(self) -> str:
        return self.html

    def bundles(self) -> list[dict[str, Any]]:
        """The outputs Jupyter shows, in order: the picture (when ``dot`` can make it) and
        the viewer, each with ``text/plain``."""
        out: list[dict[str, Any]] = []
        pic = picture(self.drawing)
        if pic:
            out.append({**pic, "text/plain": repr(self.drawing)})
        html = fragment(self.drawing, library_=self.library, height=self.height, picture=bool(pic), engine=self.engine)
        out.append({"text/html": html, "text/plain": ""})
        return out

    def _ipython_display_(self) -> None:
        from IPython.display import publish_display_data

        for bundle in self.bundles():
            publish_display_data(bundle)

    def __repr__(self) -> str:
        return f"<tensorview interactive viewer of {self.drawing.render_options.graph_name!r}>"


register(Format("html", ("html", "htm"), "text/html", page, display=True, inline=fragment))

"""The Sphinx directive: a tiny project with ``extensions = ["tensorview.sphinx"]`` is built
three times: the figure is drawn and embedded, a rebuild from scratch (``-E``) reuses the
cached drawing without recording again, and an edit of the model's source draws anew."""

from __future__ import annotations

import io
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .fixtures import needs

sphinx_application = pytest.importorskip("sphinx.application", reason=needs.SPHINX)
from sphinx.util.docutils import docutils_namespace  # noqa: E402

HAS_DOT = shutil.which("dot") is not None or shutil.which("graphviz-pure") is not None
pytestmark = pytest.mark.skipif(not HAS_DOT, reason=f"the figures are SVG: {needs.DOT}")
MODULE = "tv_sphinx_figmodels"
#: the model's source; each call of the factory leaves a line in <module>.calls (one per recording)
SOURCE = """
from torch import nn


def build(width=4):
    with open(__file__ + ".calls", "a") as f:
        f.write("recorded\\n")
    return nn.Sequential(nn.Conv2d(3, width, 3), nn.ReLU(){extra})
"""
PAGE = f"""
Models
======

.. tensorview:: {MODULE}:build
   :input-size: 1,3,8,8
   :depth: 2
   :format: svg
   :caption: The model, drawn at build time.

.. tensorview:: ../{MODULE}.py:build
   :input-size: 1,3,8,8
   :style: paper
   :alt: the same, on paper
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sys, "path", list(sys.path))  # conf.py adds the project folder
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "conf.py").write_text(
        "import os, sys\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
        'extensions = ["tensorview.sphinx"]\n'
    )
    (tmp_path / "src" / "index.rst").write_text(PAGE)
    (tmp_path / f"{MODULE}.py").write_text(SOURCE.format(extra=""))
    yield tmp_path
    sys.modules.pop(MODULE, None)


def sphinx_build(root: Path, *, fresh: bool) -> str:
    """Build the project's HTML in this process (as sphinx-build does); returns the warnings."""
    warnings = io.StringIO()
    with docutils_namespace():  # each build registers its nodes and directives anew
        app = sphinx_application.Sphinx(
            str(root / "src"),
            str(root / "src"),
            str(root / "_build" / "html"),
            str(root / "_build" / "doctrees"),
            "html",
            status=None,
            warning=warnings,
            freshenv=fresh,
        )
        app.build()
    return warnings.getvalue()


def build(root: Path, *, fresh: bool) -> str:
    assert sphinx_build(root, fresh=fresh) == ""
    return (root / "_build" / "html" / "index.html").read_text()


def recordings(root: Path) -> int:
    calls = root / f"{MODULE}.py.calls"
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def images(html: str) -> list[str]:
    return re.findall(r'<img alt="[^"]*" src="_images/(tensorview-[0-9a-f]+\.svg)" />', html)


def svg_titles(path: Path) -> list[str]:
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.parse(path).getroot()
    return [g.find(f"{ns}title").text or "" for g in root.iter(f"{ns}g") if g.get("class") == "node"]


def test_directive_draws_caches_and_redraws_on_change(project: Path) -> None:
    html = build(project, fresh=True)
    first = images(html)
    assert len(first) == 2 and first[0] != first[1]  # two figures, different options
    assert recordings(project) == 2
    assert '<figcaption>\n<p><span class="caption-text">The model, drawn at build time.</span>' in html
    assert '<img alt="the same, on paper"' in html
    svg = project / "_build" / "html" / "_images" / first[0]
    assert {"_0", "_1"} <= set(svg_titles(svg))  # the Conv2d and the ReLU
    assert "Times" in (project / "_build" / "html" / "_images" / first[1]).read_text()  # :style: paper

    # everything re-read (-E): the drawings come from the cache, nothing is recorded
    assert images(build(project, fresh=True)) == first
    assert recordings(project) == 2

    # the model's source changed: Sphinx re-reads the page (it depends on the file) and draws anew
    (project / f"{MODULE}.py").write_text(SOURCE.format(extra=", nn.Flatten()"))
    html = build(project, fresh=False)
    again = images(html)
    assert recordings(project) == 4
    assert set(again).isdisjoint(first)
    assert "_2" in svg_titles(project / "_build" / "html" / "_images" / again[0])  # the new Flatten


def test_bad_options_are_errors_in_the_build(project: Path) -> None:
    (project / "src" / "index.rst").write_text(f"T\n=\n\n.. tensorview:: {MODULE}:build\n   :depth: -2\n")
    assert "tensorview: argument --depth: bad depth '-2'" in sphinx_build(project, fresh=True)
    assert recordings(project) == 0


@pytest.mark.parametrize("fmt", ["json", "gv", "dot"])
def test_formats_that_are_no_figure_are_refused_with_the_allowed_list(project: Path, fmt: str) -> None:
    (project / "src" / "index.rst").write_text(f"T\n=\n\n.. tensorview:: {MODULE}:build\n   :format: {fmt}\n")
    warnings = sphinx_build(project, fresh=True)
    assert f"tensorview: :format: {fmt!r} is not a figure (must be one of ['svg', 'png', 'pdf', 'html']" in warnings
    assert recordings(project) == 0
    assert "<img" not in (project / "_build" / "html" / "index.html").read_text()


def test_format_html_embeds_the_interactive_viewer(project: Path) -> None:
    (project / "src" / "index.rst").write_text(
        f"T\n=\n\n.. tensorview:: {MODULE}:build\n   :format: html\n   :height: 300px\n"
        "   :caption: <b>live</b> viewer\n   :input-size: 1,3,8,8\n"
    )
    html = build(project, fresh=True)
    assert recordings(project) == 1 and "<img" not in html
    assert html.count("<!--tv:data:") == 1 and "<!--tv:height:300-->" in html  # one viewer, 300 px
    assert html.count("<!--tv:lib:") == 1  # the library came with it: the figure works alone
    assert "<figcaption>&lt;b&gt;live&lt;/b&gt; viewer</figcaption>" in html
    build(project, fresh=True)  # from the cache
    assert recordings(project) == 1

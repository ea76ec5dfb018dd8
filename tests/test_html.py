"""The interactive HTML viewer, read as text (tests/test_viewer_browser.py runs it in
Chromium): one self-contained page, the whole recording in compact form, nothing from the
model able to break out of the page's elements, the library once per notebook page."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
import struct
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.graph import annotate
from tensorview.render import html as viewer_html
from tensorview.render.compact import decode, encode

from .fixtures import needs
from .fixtures.cost_models import CNN
from .fixtures.models import ZOO
from .test_hostile_names import hostile_model


class Page(HTMLParser):
    """Elements and script contents of a page, as a browser's tokenizer splits them."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in: dict[str, str | None] | None = None
        #: the viewer's parts kept in comments (``<!--tv:KEY:...-->``), by key
        self.parts: dict[str, str] = {}
        self.comments: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in = dict(attrs)
            self.scripts.append((self._in, ""))

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in = None

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)
        m = re.match(r"tv:(\w+):", data)
        if m:
            self.parts[m.group(1)] = data[m.end() :]

    def payload(self) -> Any:
        return json.loads(unpack(self.parts["data"]))

    def data(self) -> Any:
        return self.payload()["graph"]

    def config(self) -> Any:
        return self.payload()["config"]


def unpack(b64: str) -> str:
    """What boot.js does with a packed part: base64, then gunzip."""
    return gzip.decompress(base64.b64decode(b64)).decode("utf-8")


HAS_DOT = shutil.which("dot") is not None


def cnn() -> tv.ComputationGraph:
    return tv.draw_graph(CNN(), input_size=(1, 3, 16, 16), graph_name="cnn")


def test_save_html_writes_one_self_contained_page(tmp_path: Path) -> None:
    graph = cnn()
    path = graph.save(tmp_path / "cnn.html")
    text = Path(path).read_text(encoding="utf-8")
    page = Page(text)
    assert text.startswith("<!DOCTYPE html>")
    tags = [t for t, _ in page.tags]
    # one script runs (the starter); library, data and start code are comments; nothing is loaded
    assert tags.count("script") == 1 and not [a for t, a in page.tags if "src" in a or "href" in a]
    assert set(page.parts) == {"lib", "engine", "data", "boot"}  # no height: the page fills the window
    assert page.parts["engine"] == "elk" and page.config()["engine"] == "elk"
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp is not None and csp.startswith("default-src 'none'") and "worker-src blob:" in csp
    assert page.data() == json.loads(json.dumps(encode(graph.graph)))
    assert "<title>cnn — tensorview</title>" in text
    # the vendored library with its version is what runs: elkjs (the saved page's engine),
    # then the viewer's scripts
    lib = unpack(page.parts["lib"])
    elk, viewer = lib.split(viewer_html.VIEWER_MARK)
    assert elk == "/*tv:engine:elk*/\n" + viewer_html.asset("vendor/elk.bundled.js")
    assert viewer.startswith(viewer_html.asset("graph.js")) and viewer_html.asset("viewer.js") in viewer
    assert (Path(viewer_html.__file__).parent / "viewer/vendor/LICENSE-elkjs.md").exists()
    assert page.parts["boot"] == viewer_html.asset("boot.js") and "--" not in page.parts["boot"]


def test_a_notebook_output_carries_dagre_and_the_page_elkjs() -> None:
    graph = cnn()
    engine, viewer = unpack(Page(graph.interactive().html).parts["lib"]).split(viewer_html.VIEWER_MARK)
    # dagre as shipped, then the adapter that answers in ELK's form; the same viewer scripts
    want = viewer_html.asset("vendor/dagre.min.js") + "\n" + viewer_html.asset("dagre.js")
    assert engine == "/*tv:engine:dagre*/\n" + want
    assert viewer == viewer_html.library_text("elk").split(viewer_html.VIEWER_MARK)[1]
    vendor = Path(viewer_html.__file__).parent / "viewer/vendor"
    assert (vendor / "LICENSE-dagre").exists() and (vendor / "LICENSE-graphlib").exists()
    assert "3.1.3" in (vendor / "README.md").read_text() and "dagre" in viewer_html.asset("vendor/dagre.min.js")[:40]
    # a tenth of the size: about 0.07 MB per notebook output instead of 0.7 MB
    assert len(viewer_html.library("dagre")) < 0.15 * len(viewer_html.library("elk"))


@pytest.mark.parametrize("name", sorted(ZOO))
def test_compact_form_round_trips_the_whole_recording(name: str) -> None:
    make_model, make_inputs = ZOO[name]
    model = make_model()
    args, kwargs = make_inputs()
    with torch.no_grad(), tv.Recorder(model) as rec:
        model(*args, **kwargs)
    g = rec.graph.graph
    annotate(g, _Tag())
    data = decode(json.loads(viewer_html.script_json(encode(g))))
    assert data["kind"] == "".join(n.kind[0] for n in g.nodes)
    assert data["parent"] == [n.parent for n in g.nodes]
    assert data["name"] == [n.name for n in g.nodes]
    assert data["edges"] == g.edges
    assert data["modules"] == {m.id: (m.path, m.cls_module, m.end, m.failed | m.opaque << 1) for m in g.modules()}
    assert data["tensors"] == {t.id: (t.dtype, t.device, t.role) for t in g.tensors()}
    assert data["what"] == [_what(n) for n in g.nodes]
    assert data["fields"] == {t.id: t.field for t in g.tensors() if t.field is not None}
    assert data["notes"] == {"tag": {i: [i % 3, "x"] for i in range(0, len(g.nodes), 2)}}


class _Tag:
    name = "tag"

    def __call__(self, graph: tv.Graph) -> dict[int, Any]:
        return {i: (i % 3, "x") for i in range(0, len(graph.nodes), 2)}


def _what(n: Any) -> str:
    if isinstance(n, tv.TensorNode):
        return ",".join(map(str, n.shape))
    return n.op if isinstance(n, tv.FunctionNode) else n.cls_name


HOSTILE = "</script><img src=x onerror=alert(1)><!--"


def test_hostile_names_cannot_break_out_of_the_page(tmp_path: Path) -> None:
    model = hostile_model(HOSTILE, cls_name="Evil</script><script>alert(2)</script>")
    graph = tv.draw_graph(model, input_size=(1, 3), graph_name="</title><script>alert(3)</script>")

    class Styler(tv.GraphvizStyler):
        colors = {**tv.GraphvizStyler.colors, "module": "red;}</style><script>alert(4)</script>"}

    graph = graph.view(styler=Styler())
    text = Path(graph.save(tmp_path / "evil.html")).read_text(encoding="utf-8")
    page = Page(text)
    # the same elements as for a harmless model: nothing injected
    harmless = Page(Path(cnn().save(tmp_path / "ok.html")).read_text(encoding="utf-8"))
    assert [t for t, _ in page.tags] == [t for t, _ in harmless.tags]
    assert "<img" not in text and [c.split(":")[1] for c in page.comments] == ["lib", "engine", "data", "boot"]
    for bad in ("</script><img", "<script>alert", "</title><script>", "</style><script>"):
        assert bad not in text
    # the names are all there, as JSON escapes that read back unchanged
    data = page.data()
    assert HOSTILE in data["strings"] and "Evil</script><script>alert(2)</script>" in data["strings"]
    config = page.config()
    assert config["name"] == "</title><script>alert(3)</script>"
    assert config["colors"]["module"] == "red;}</style><script>alert(4)</script>"
    assert "<title>&lt;/title&gt;&lt;script&gt;alert(3)&lt;/script&gt; — tensorview</title>" in text


def test_script_json_never_writes_markup() -> None:
    value = {"a": "</script><!--<script>&amp;", "b": ["\u2028", "\ud800"]}
    text = viewer_html.script_json(value)
    assert not set("<>&") & set(text) and text.isascii()
    # a lone surrogate, which XML cannot carry, as the visible escape of graph.svg()
    assert json.loads(text) == {"a": value["a"], "b": ["\u2028", "\\ud800"]}


def test_every_notebook_output_carries_the_whole_viewer() -> None:
    graph = cnn()
    first, second = graph.interactive()._repr_html_(), graph.view(depth=1).interactive()._repr_html_()
    pages = [Page(first), Page(second)]
    # each output has the library, its own data and the start code: it works alone
    assert all(set(p.parts) == {"lib", "engine", "data", "height", "boot"} for p in pages)
    assert pages[0].parts["lib"] == pages[1].parts["lib"]
    assert pages[0].data() == pages[1].data() and pages[1].config()["options"]["depth"] == 1
    assert pages[0].config()["inline"] is True
    # the markup is comments and one script: nothing a sanitiser keeps, nothing shown without scripts
    assert all([t for t, _ in p.tags] == ["script"] for p in pages)
    ids = [a["id"] for p in pages for t, a in p.tags]
    assert len(set(ids)) == 2
    assert "tv:height:640" in first and "tv:height:300" in graph.interactive(height=300).html
    # the library, packed: about 0.07 MB of the 0.16 MB of JavaScript (dagre and the viewer)
    lib = len(pages[0].parts["lib"])
    assert lib < 0.45 * len(viewer_html.library_text("dagre")) and len(second) - lib < 20_000
    assert "lib" not in Page(graph.interactive(library=False).html).parts


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_interactive_shows_a_picture_then_the_viewer() -> None:
    graph = cnn()
    picture, viewer = graph.interactive().bundles()
    # the picture: SVG scaled to the output's width, PNG for where SVG is not shown, and text
    assert set(picture) == {"image/svg+xml", "image/png", "text/plain"}
    svg = ET.fromstring(picture["image/svg+xml"].split("-->", 1)[-1].split("?>", 1)[-1].lstrip())
    assert svg.get("style") == "max-width: 100%; height: auto;" and svg.get("data-tensorview") == "picture"
    assert svg.get("viewBox") and len(svg.findall(".//{http://www.w3.org/2000/svg}g[@class='node']")) > 5
    png = base64.b64decode(picture["image/png"])
    assert png[:4] == b"\x89PNG" and picture["text/plain"] == repr(graph)
    assert set(viewer) == {"text/html", "text/plain"} and viewer["text/plain"] == ""
    assert Page(viewer["text/html"]).data() == json.loads(json.dumps(encode(graph.graph)))


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_a_wide_picture_is_scaled_and_its_png_capped() -> None:
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(300)])
    graph = tv.draw_graph(model, input_size=(1, 4), graph_dir="LR", depth=1, fold=False)
    bundle = graph._repr_mimebundle_()
    assert set(bundle) == {"image/svg+xml", "image/png", "text/plain"}
    # the SVG: drawn at the output's width (front-ends show it as an <img>), proportions kept
    root = re.search(r"<svg\b[^>]*>", bundle["image/svg+xml"]).group(0)
    assert 'width="100%"' in root and "height=" not in root and "viewBox=" in root
    small = re.search(r"<svg\b[^>]*>", cnn()._repr_mimebundle_()["image/svg+xml"]).group(0)
    assert re.search(r'width="[\d.]+pt" height="[\d.]+pt"', small)  # a narrow picture keeps its size
    full = graph.svg()
    width_pt = float(re.search(r'<svg width="([\d.]+)pt"', full).group(1))
    assert width_pt * 96 / 72 > 40_000  # the drawing is wide...
    png = base64.b64decode(bundle["image/png"])
    width, height = struct.unpack(">II", png[16:24])
    assert 9000 < width <= 100 * 96 and height > 5  # ...its notebook PNG fits 100 inches at 96 dpi


def test_interactive_checks_its_arguments() -> None:
    graph = cnn()
    with pytest.raises(tv.InvalidInputError, match="height must be an int >= 100"):
        graph.interactive(height=10)
    with pytest.raises(tv.InvalidTypeError, match="library must be True, False or None"):
        graph.interactive(library="yes")  # type: ignore[arg-type]
    with pytest.raises(tv.InvalidInputError, match=r"engine must be one of \['dagre', 'elk'\], got 'graphviz'"):
        graph.interactive(engine="graphviz")


def test_a_notebook_output_may_carry_elkjs() -> None:
    # the better layout of big views, at 0.68 MB an output instead of 0.07 MB
    graph = cnn()
    elk = Page(graph.interactive(engine="elk").html)
    assert unpack(elk.parts["lib"]).startswith("/*tv:engine:elk*/\n" + viewer_html.asset("vendor/elk.bundled.js")[:200])
    assert "height" in elk.parts and elk.data() == Page(graph.interactive().html).data()
    _, viewer = graph.interactive(engine="elk").bundles()
    assert viewer_html.library("elk") in viewer["text/html"]


def test_the_viewer_starts_at_the_users_view() -> None:
    graph = cnn().view(depth=1, fold=False, graph_dir="LR", show_params=True)
    config = viewer_html.config(graph)
    assert config["options"]["depth"] == 1 and config["options"]["fold"] is False
    assert config["options"]["show_params"] is True and config["graph_dir"] == "LR"


def test_compact_form_is_small() -> None:
    class Deep(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.LayerNorm(8)) for _ in range(20))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = layer(x) + x
            return x

    graph = tv.draw_graph(Deep(), input_size=(2, 8))
    compact = len(viewer_html.script_json(encode(graph.graph)))
    full = len(json.dumps(graph.to_json(), separators=(",", ":")))
    assert compact < full / 4
    assert compact / len(graph.graph.nodes) < 60  # bytes per node


def test_the_viewer_files_are_package_data() -> None:
    import fnmatch

    tomllib = pytest.importorskip("tomllib", reason=needs.TOMLLIB)

    root = Path(viewer_html.__file__).resolve().parent.parent.parent
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["tensorview"]
    files = [p.relative_to(root / "tensorview").as_posix() for p in (root / "tensorview/render/viewer").rglob("*")]
    files = [f for f in files if (root / "tensorview" / f).is_file()]
    assert {
        "render/viewer/viewer.js",
        "render/viewer/vendor/elk.bundled.js",
        "render/viewer/vendor/LICENSE-elkjs.md",
        "render/viewer/vendor/dagre.min.js",
        "render/viewer/vendor/LICENSE-dagre",
        "render/viewer/dagre.js",
    } <= set(files)
    assert all(any(fnmatch.fnmatch(f, p) for p in patterns) for f in files)
    # every script the page inlines is one of them
    assert {f"render/viewer/{s}" for s in viewer_html.SCRIPTS} <= set(files)


def test_the_viewer_takes_the_stylers_colours() -> None:
    dark = viewer_html.config(cnn().view(style="dark"))["colors"]
    assert dark["background"] == "#1e1e1e" and dark["text"] == "#e0e0e0" and dark["module"] == "#2c4a36"
    paper = viewer_html.config(cnn().view(style="paper"))["colors"]
    assert paper["module"] == "rgb(224, 224, 224)"  # X11 gray88, which CSS does not know
    plain = viewer_html.config(cnn().view(styler=tv.GraphvizStyler(fillcolor="white")))["colors"]
    assert plain["tensor"] == plain["module"] == "white"
    assert viewer_html.config(cnn())["colors"] == {}  # no styler: the viewer's own look


def test_viewer_data_holds_no_character_xml_cannot_carry() -> None:
    """Names go into the viewer's data with the visible escapes of DOT's SVG (issue 21 C1),
    so the SVG the viewer exports is XML."""
    import json
    import re

    from tensorview.render.html import script_json

    from .test_hostile_names import NAMES, drawn

    graph = drawn(NAMES["control"] + NAMES["nul"] + NAMES["surrogate"], graph_name="g\x01")
    data = json.loads(script_json({"names": [m.path for m in graph.graph.modules()], "name\x02": "x\x85"}))
    text = json.dumps(data, ensure_ascii=False)
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]", text)
    assert "ctl\\x01\\x1b[31m\\x7fnul\\x00bytelone\\ud800surrogate" in data["names"]
    assert data["name\\x02"] == "x\\x85"

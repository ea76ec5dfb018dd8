"""A crash of the layout program never reaches the user unexplained: the drawing is laid
out again with safer attributes, and a warning says so (issue 12: dot 2.43 segfaults on
torchvision's RAFT with ``splines=polyline``)."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import tensorview as tv
from tensorview.render import executable
from tensorview.render.executable import SAFER_LAYOUTS, with_graph_attrs

from .fixtures import needs
from .test_graph import small

REAL_DOT = shutil.which("dot")
pytestmark = pytest.mark.skipif(REAL_DOT is None, reason=needs.DOT)


def fake_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, survives: str) -> None:
    """A ``dot`` on PATH that segfaults unless the source's last word on splines is ``survives``."""
    script = tmp_path / "bin" / "dot"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        "input=$(cat)\n"
        f'last=$(printf "%s" "$input" | grep -o "splines=[a-z]*" | tail -n 1)\n'
        f'[ "$last" = "{survives}" ] || kill -SEGV $$\n'
        f'printf "%s" "$input" | {REAL_DOT} "$@"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin:/bin")
    assert executable.find_dot() == str(script)


def test_a_crash_is_retried_with_safer_attributes_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dot(tmp_path, monkeypatch, survives="splines=line")
    # the bounded layout of big views asks for polyline splines
    source = with_graph_attrs(tv.ComputationGraph(small()).source, {"splines": "polyline"})
    with pytest.warns(RuntimeWarning, match=r"crashed \(SIGSEGV, signal 11\).*again with splines=line"):
        svg = executable.run_dot(source, "svg")
    assert ET.fromstring(svg).tag.endswith("svg")


def test_a_crash_with_every_safer_layout_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dot(tmp_path, monkeypatch, survives="never")
    graph = tv.ComputationGraph(small())
    with pytest.raises(tv.RenderError, match=r"crashed \(SIGSEGV, signal 11\).*also with splines=line, splines=false"):
        graph.save(tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


def test_an_ordinary_failure_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(tv.RenderError, match="failed with exit status 1"):
        executable.run_dot("digraph { a -> }", "svg")


def test_graph_attributes_are_set_last() -> None:
    out = with_graph_attrs("digraph g {\n\tgraph [splines=polyline]\n\ta\n}\n", SAFER_LAYOUTS[0])
    assert out.endswith("\tgraph [splines=line]\n}\n") and out.count("}") == 1
    with pytest.raises(tv.RenderError, match="does not end with"):
        with_graph_attrs("not dot", {"splines": "line"})

"""``tv.summary`` with torchinfo's arguments (issue 19 D): the parameter table without
inputs, positional order, ``batch_dim``, ``col_names``, ``col_width``, ``row_settings``,
``verbose``, torchinfo's result attributes, folding of repeated blocks in the table and
uncounted FLOPs shown as uncounted.  torchinfo itself is the comparison peer."""

from __future__ import annotations

import re
import sys
from types import SimpleNamespace

import pytest
import torch
import torchinfo
from torch import nn

import tensorview as tv
from tensorview.errors import InvalidInputError

from .fixtures import cost_models as cm
from .fixtures.hf import written_for

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


def _lines(table: str) -> list[str]:
    """The module rows of a table (between the rule under the header and the blank line)."""
    lines = table.splitlines()
    return lines[2 : lines.index("")]


def _row(table: str, name: str) -> list[str]:
    """The cells of the row whose first cell is ``name`` (split at two spaces or more)."""
    for line in _lines(table):
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == name:
            return cells
    raise AssertionError(f"no row {name!r} in\n{table}")


class Stack(nn.Module):
    """Eight identical blocks, each fed by the one before, then a head."""

    def __init__(self, n: int = 8) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(16, 16), nn.ReLU()) for _ in range(n))
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.out = nn.Linear(6, 10, bias=False)
        self.out.weight = self.emb.weight
        self.frozen = nn.Linear(6, 6)
        self.frozen.requires_grad_(False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.frozen(self.emb(ids)))


def test_without_inputs_it_is_the_parameter_table() -> None:
    model = Tied()
    s = tv.summary(model, verbose=0)
    assert [r.path for r in s.rows] == ["", "emb", "out", "frozen"]  # every module, no forward
    assert s.total_params == sum(p.numel() for p in model.parameters()) == 60 + 42
    assert (s.trainable_params, s.frozen_params) == (60, 42)
    rows = {r.path: r for r in s.rows}
    assert rows["out"].shared_with == ("emb",) and rows["frozen"].trainable_params == 0
    table = str(s)
    assert _lines(table)[0].split() == ["model", "Tied", "102", "Partial"]
    assert _row(table, "out")[2:] == ["60 *", "True"]
    assert _row(table, "frozen")[2:] == ["42", "False"]
    assert "parameters shared between modules (counted once): emb ↔ out" in table
    assert "No forward ran" in table and "FLOPs (forward)" not in table
    assert s.to_dict()["totals"]["flops"] is None and not s.forward
    with pytest.raises(InvalidInputError, match="output_size.*need a forward pass"):
        tv.summary(model, col_names=["output_size"], verbose=0)


def test_torchinfo_positional_order_and_batch_dim() -> None:
    model = cm.CNN()
    # summary(model, input_size, input_data, batch_dim, cache_forward_pass, col_names, col_width, depth, ...)
    s = tv.summary(model, (3, 16, 16), None, 0, None, ["input_size", "output_size"], 30, 1, verbose=0)
    assert s.rows[0].input_shapes == ((1, 3, 16, 16),)
    assert [c for c in s.options.columns] == ["input_size", "output_size"] and s.options.col_width == 30
    header = str(s).splitlines()[0]
    assert re.split(r"\s{2,}", header) == ["Module", "Class", "Input shape", "Output shape"]
    assert header.index("Output shape") - header.index("Input shape") == 32  # a column 30 wide, then 2 spaces
    assert max(r.depth for r in s.rows if r.path in str(s)) <= 1
    s = tv.summary(cm.MLP(), [(4, 16)], batch_dim=-2, verbose=0)
    assert s.rows[0].input_shapes == ((4, 1, 16),)
    with pytest.raises(InvalidInputError, match="batch_dim 5 is out of range"):
        tv.summary(model, (3, 16, 16), batch_dim=5, verbose=0)


def test_columns_have_torchinfo_names_and_macs_sit_beside_flops() -> None:
    model = cm.CNN()
    cols = ["input_size", "output_size", "num_params", "params_percent", "kernel_size", "mult_adds", "trainable"]
    s = tv.summary(model, input_size=(2, 3, 16, 16), col_names=cols, verbose=0)
    table = str(s)
    header = re.split(r"\s{2,}", table.splitlines()[0])
    assert header == [
        "Module",
        "Class",
        "Input shape",
        "Output shape",
        "Params",
        "Params %",
        "Kernel shape",
        "MACs",
        "FLOPs",
        "Trainable",
    ]
    conv1 = _row(table, "conv1")
    assert conv1[2:5] == ["(2, 3, 16, 16)", "(2, 8, 16, 16)", "224"]
    assert conv1[5] == f"{100 * 224 / s.total_params:.2f}%" and conv1[6] == "[3, 3]"
    flops = {r.path: r.flops for r in s.rows}["conv1"]
    assert flops == 2 * 2 * 8 * 16 * 16 * 3 * 3 * 3
    assert conv1[7:10] == [tv.cost.fmt_flops(flops // 2, "MACs"), tv.cost.fmt_flops(flops), "True"]
    assert s.total_mult_adds == s.total_flops // 2
    with pytest.raises(InvalidInputError, match=r"unknown col_name: 'params'.*'num_params'"):
        tv.summary(model, input_size=(2, 3, 16, 16), col_names=["params"], verbose=0)
    with pytest.raises(InvalidInputError, match="col_width must be an int > 0"):
        tv.summary(model, input_size=(2, 3, 16, 16), col_width=0, verbose=0)


def test_uncounted_ops_are_not_zero_flops() -> None:
    """BatchNorm, ReLU and pooling have no FLOP formula in torch: their rows say so (—),
    while a module that does no arithmetic (Dropout in eval, Embedding) costs 0."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bn = nn.BatchNorm1d(4)
            self.act = nn.ReLU()
            self.pool = nn.MaxPool1d(2)
            self.drop = nn.Dropout()
            self.fc = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.drop(self.pool(self.act(self.bn(x)))))

    s = tv.summary(Net(), input_size=(3, 4, 4), mode="eval", col_names=["mult_adds"], verbose=0)
    table = str(s)
    for name in ("bn", "act", "pool"):
        assert _row(table, name)[2:] == ["—", "—"], name
        assert {r.path: r for r in s.rows}[name].uncounted > 0
    assert _row(table, "drop")[2:] == ["0 MACs", "0 FLOPs"]
    assert _row(table, "fc")[2:] == ["48 MACs", "96 FLOPs"]  # (3, 4, 2) x (2, 2)


def test_repeated_blocks_fold_in_the_table_as_in_the_graph() -> None:
    s = tv.summary(Stack(), input_size=(2, 16), verbose=0)
    names = [line.strip().split("  ")[0] for line in _lines(str(s))]
    assert names == ["model", "layers.0–7 ×8", "0", "1", "head"]  # one row per block, its inner rows once
    assert _row(str(s), "layers.0–7 ×8")[2:4] == ["(2, 16)", "272"]  # the numbers of one call
    assert "5 of 26 module calls shown" in str(s) and "table(fold=False)" in str(s)
    every = [line.strip().split("  ")[0] for line in _lines(s.table(fold=False))]
    assert every[:4] == ["model", "layers.0", "0", "1"] and len(every) == 26
    listed = tv.summary(Stack(), input_size=(2, 16), fold=False, verbose=0)
    assert len(_lines(str(listed))) == 26
    # the graph folds the same run
    graph = tv.draw_graph(Stack(), input_size=(2, 16), fold=True, source=False)
    assert "×8" in graph.source


def test_row_settings() -> None:
    model = cm.TwiceUsed()
    s = tv.summary(model, input_size=(2, 4), row_settings=("depth", "var_names"), verbose=0)
    table = str(s)
    assert _row(table, "fc")[1] == "Linear: 1-1" and _row(table, "fc #2")[1] == "Linear: 1-2"
    hidden = str(tv.summary(model, input_size=(2, 4), row_settings=["hide_recursive_layers"], verbose=0))
    assert [line.split()[0] for line in _lines(hidden)] == ["model", "fc", "head"]  # the second fc call hidden
    ascii_only = tv.summary(Stack(), input_size=(2, 16), row_settings=["ascii_only"], verbose=2)
    text = str(ascii_only)
    assert text.isascii() and "layers.0-7 x8" in text and "'-weight" in text
    with pytest.raises(InvalidInputError, match=r"unknown row_setting: 'vars'"):
        tv.summary(model, input_size=(2, 4), row_settings=["vars"], verbose=0)


def test_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    model = cm.MLP()
    s = tv.summary(model, input_size=(2, 16), verbose=0)
    assert capsys.readouterr().out == ""
    s = tv.summary(model, input_size=(2, 16), verbose=1)
    assert capsys.readouterr().out == str(s) + "\n" and "weight" not in str(s)
    s = tv.summary(model, input_size=(2, 16), verbose=2, col_names=["output_size", "num_params", "trainable"])
    printed = capsys.readouterr().out
    assert printed == str(s) + "\n"
    assert _row(printed, "└─weight") == ["└─weight", "Parameter", "(32, 16)", "512", "True"]
    assert _row(printed, "└─bias")[2:] == ["(32)", "32", "True"]
    s = tv.summary(model, input_size=(2, 16))  # torchinfo's default outside a REPL: print
    assert capsys.readouterr().out == str(s) + "\n"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "ps1", ">>> ", raising=False)  # in a REPL the returned summary shows itself
        tv.summary(model, input_size=(2, 16))
    assert capsys.readouterr().out == ""
    with pytest.raises(InvalidInputError, match="verbose must be 0"):
        tv.summary(model, input_size=(2, 16), verbose=3)


def test_torchinfo_options_never_reach_forward() -> None:
    seen: list[str] = []

    class Kwargs(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, **kwargs: object) -> torch.Tensor:
            seen.extend(kwargs)
            return self.fc(x)

    model = Kwargs()
    s = tv.summary(
        model,
        input_size=(2, 4),
        verbose=0,
        col_names=["num_params"],
        row_settings=["depth"],
        col_width=20,
        batch_dim=None,
        cache_forward_pass=False,
        device="cpu",
    )
    assert seen == [] and s.total_params == 20
    tv.summary(model, input_size=(2, 4), verbose=0, scale=2, device="cpu")
    assert seen == ["scale"]  # a keyword forward takes is still passed on


def test_totals_equal_torchinfo() -> None:
    model = cm.CNN().eval()
    x = torch.randn(2, 3, 16, 16)
    theirs = torchinfo.summary(model, input_data=x, verbose=0, col_names=["output_size", "num_params", "mult_adds"])
    ours = tv.summary(model, input_data=x, mode="same", device="cpu", verbose=0)
    assert (ours.total_params, ours.trainable_params) == (theirs.total_params, theirs.trainable_params)
    # torchinfo 1.8 leaves out the bytes of conv2, whose weights run through F.conv2d
    assert ours.total_param_bytes == 4 * ours.total_params == theirs.total_param_bytes + 4 * (16 * 8 * 9 + 16)
    rows = {r.path: r for r in ours.summary_list}
    theirs_rows = {layer.var_name: layer for layer in theirs.summary_list}
    # torch's formula counts the products; torchinfo adds one per output element for the bias
    assert rows["conv1"].macs == theirs_rows["conv1"].macs - 2 * 8 * 16 * 16 == 2 * 8 * 16 * 16 * 3 * 3 * 3
    assert ours.total_mult_adds == ours.total_flops // 2  # every op with a formula: F.conv2d too
    assert ours.total_mult_adds > theirs.total_mult_adds
    assert ours.total_output_bytes == theirs.total_output_bytes
    assert len(ours.summary_list) == len(theirs.summary_list) == 4 and ours.summary_list[1].class_name == "Conv2d"
    assert ours.summary_list[1].output_size == [2, 8, 16, 16] and ours.summary_list[1].num_params == 224


def test_a_decoder_table_has_one_row_per_kind_of_layer_however_many_layers() -> None:
    import transformers

    tables = []
    for n in (3, 12):
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(cm.tiny_llama_config(num_hidden_layers=n))
        s = tv.summary(model, input_size=(1, 8), dtypes=[torch.long], verbose=0)
        assert len(s.rows) > 10 * n  # every call is still in .rows
        tables.append(_lines(str(s)))
    assert len(tables[0]) == len(tables[1]) == 11
    assert any(line.strip().startswith("layers.0–11 ×12 ") for line in tables[1])


class LazyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.LazyLinear(8)
        self.bn = nn.LazyBatchNorm1d()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.fc(x))


def test_lazy_modules_are_materialised_on_a_copy_and_refused_on_meta() -> None:
    model = LazyNet()
    for device in ("cpu", "auto"):  # auto: meta cannot materialise them, so the model's device
        s = tv.summary(model, input_size=(4, 5), device=device, verbose=0)
        assert s.total_params == 5 * 8 + 8 + 2 * 8
        assert {r.path: r.flops for r in s.rows}["fc"] == 2 * 4 * 5 * 8
        assert nn.parameter.is_lazy(model.fc.weight) and isinstance(model.fc, nn.LazyLinear)  # the caller's stays lazy
    assert "lazy modules are materialised" in s.fallback and "Recorded on the model's device, not meta" in str(s)
    with pytest.raises(InvalidInputError, match=r"lazy modules \(fc, bn\).*pass device='cpu'"):
        tv.summary(model, input_size=(4, 5), device="meta", verbose=0)
    s = tv.summary(model, verbose=0)  # the parameter table: nothing to run, they count 0
    assert s.total_params == 0 and s.uninitialised == 6  # fc: weight, bias; bn: weight, bias, running mean, var
    assert "6 parameters or buffers of lazy modules are not initialised yet: counted as 0" in str(s)


def test_a_failing_cost_probe_start_shows_its_own_error() -> None:
    """The cost probe failed to start on lazy parameters, and stopping the modes it had
    not entered raised ``IndexError: pop from an empty deque`` in its place."""
    probe = tv.cost.CostProbe()
    root = SimpleNamespace(id=0, path="", end=-1)
    with torch.enable_grad(), pytest.raises(ValueError, match="uninitialized parameter"):
        probe.start(root, nn.LazyLinear(3))  # type: ignore[arg-type]
    probe.stop()  # the recorder's finally: nothing to leave, no IndexError
    assert probe.record is None
    probe.start(root, nn.Linear(2, 3))  # type: ignore[arg-type]
    probe.stop()
    assert probe.record is not None and probe.record.totals.total_params == 9


def test_a_scripted_module_runs_on_the_cpu_and_says_what_to_do_on_meta() -> None:
    with pytest.warns(DeprecationWarning, match="torch.jit.script"):
        scripted = torch.jit.script(cm.MLP())
    for device in ("cpu", "auto"):
        s = tv.summary(scripted, input_size=(2, 16), device=device, verbose=0)
        assert s.total_params == 16 * 32 + 32 + 32 * 8 + 8 and s.total_flops == 2 * 2 * (16 * 32 + 32 * 8)
    assert s.fallback == "a TorchScript module cannot be moved to meta"
    with pytest.raises(InvalidInputError, match="TorchScript module.*pass device='cpu'"):
        tv.summary(scripted, input_size=(2, 16), device="meta", verbose=0)


def test_auto_records_on_the_models_device_where_meta_cannot_run_the_forward() -> None:
    class ReadsAValue(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x) * float(x.abs().max().item() > 0)

    s = tv.summary(ReadsAValue(), input_size=(2, 4), verbose=0)
    assert s.fallback.startswith("on meta, ") and ".item()" in s.fallback
    assert s.total_flops == 2 * 2 * 4 * 4 and s.graph.graph.inputs  # recorded on the CPU
    assert not tv.summary(cm.MLP(), input_size=(2, 16), verbose=0).fallback  # meta where it can
    with pytest.raises(tv.RecordingError, match="cannot run on the meta device"):
        tv.summary(ReadsAValue(), input_size=(2, 4), device="meta", verbose=0)
    # where the model's device cannot run it either (inputs on meta), meta's error says what to do
    with pytest.raises(tv.RecordingError, match="cannot run on the meta device"):
        tv.summary(ReadsAValue(), input_data=torch.randn(2, 4, device="meta"), verbose=0)


def test_torchinfo_input_rules_and_error_classes() -> None:
    model = cm.MLP()
    x = torch.randn(3, 16)
    s = tv.summary(model, input_data=x, verbose=0)
    assert s.input_size == torch.Size([3, 16]) and s.total_input == 3 * 16 * 4
    assert tv.summary(model, input_data=[x], verbose=0).input_size == [torch.Size([3, 16])]
    assert tv.summary(model, [(1, 16)], batch_dim=None, verbose=0).input_size == [(1, 16)]
    assert tv.summary(model, (16,), batch_dim=0, verbose=0).input_size == [(16,)]  # as given, batch not added
    # what torchinfo raises, a switching user's except still catches
    with pytest.raises(RuntimeError, match="one of input_size or input_data, not both"):
        tv.summary(model, (1, 16), x, verbose=0)
    with pytest.raises(RuntimeError, match="bad device 'lol'"):
        tv.summary(model, input_size=(1, 16), device="lol", verbose=0)
    with pytest.raises(TypeError, match="input_size must be a shape"):
        tv.summary(model, input_size="hello", verbose=0)
    with pytest.raises(TypeError, match="input_size must be a shape"):
        tv.summary(model, input_size={0: 1}, verbose=0)

    class TwoInputs(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
            return x + self.emb(ids)

    # torchinfo's tensor types (torch.LongTensor) are dtypes too
    s = tv.summary(TwoInputs(), [(2, 4), (2,)], dtypes=[torch.FloatTensor, torch.LongTensor], verbose=0)
    assert s.rows[0].input_shapes == ((2, 4), (2,)) and s.graph.graph.tensor(s.graph.graph.inputs[1]).dtype == "int64"


def test_the_parameter_table_lists_every_name_of_a_module() -> None:
    act = nn.LeakyReLU()
    model = nn.Sequential(act, nn.Identity(), act, nn.Identity(), act)
    s = tv.summary(model, verbose=0)
    assert [r.path for r in s.rows] == ["", "0", "1", "2", "3", "4"]
    assert [r.repeat for r in s.rows] == [False, False, False, True, False, True]


def test_one_module_called_again_and_again_folds_under_its_name() -> None:
    class Thrice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.fc(self.fc(x)))

    s = tv.summary(Thrice(), input_size=(2, 4), verbose=0)
    names = [re.split(r"\s{2,}", line.strip())[0] for line in _lines(str(s))]
    assert names[0] == "model" and names[-1] == "fc #2–3 ×2" and len(names) == 3
    assert [re.split(r"\s{2,}", line.strip())[0] for line in _lines(s.table(fold=False))] == [
        "model",
        "fc",
        "fc #2",
        "fc #3",
    ]


def test_hide_recursive_layers_hides_what_the_second_call_ran_too() -> None:
    block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    model = nn.Sequential(block, nn.Linear(4, 4), block)
    shown = str(tv.summary(model, input_size=(2, 4), row_settings=["hide_recursive_layers"], fold=False, verbose=0))
    assert [re.split(r"\s{2,}", line.strip())[0] for line in _lines(shown)] == ["model", "0", "0", "1", "1"]
    static = str(tv.summary(model, row_settings=["hide_recursive_layers"], verbose=0))  # the table of names
    assert [re.split(r"\s{2,}", line.strip())[0] for line in _lines(static)] == ["model", "0", "0", "1", "1"]


def test_a_scripted_modules_submodules_are_listed_from_its_tree() -> None:
    """Inside a TorchScript call nothing is recorded: its modules are listed from the
    module tree (parameters, no shapes or costs), as torchinfo lists them."""

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pre = nn.Sequential(*[nn.Linear(4, 4) for _ in range(3)])  # folds
            with pytest.warns(DeprecationWarning):
                self.inner = torch.jit.script(cm.MLP(4, 8, 2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(self.pre(x))

    s = tv.summary(Outer(), input_size=(2, 4), device="cpu", verbose=0)
    assert [r.path for r in s.rows if not r.ran] == ["inner.fc1", "inner.fc2"]
    assert [r.params for r in s.rows if not r.ran] == [4 * 8 + 8, 8 * 2 + 2]
    rows = _lines(str(s))
    assert re.split(r"\s{2,}", rows[-2].strip())[:4] == ["fc1", "Linear", "--", "40"]
    assert re.split(r"\s{2,}", rows[-2].strip())[4:] == ["--", "--", "--"]  # not measured, not 0
    assert any("0–2 ×3" in line for line in rows)  # the fold before it does not hide them

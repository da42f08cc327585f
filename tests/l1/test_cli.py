"""`cyclesim l1`: exit codes, text, JSON, the side-by-side comparison and the plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cyclesim.l1.cli import main
from cyclesim.l1.config import load_l1_config
from cyclesim.spec.arch import load_architecture

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "l1_placement").glob("*.yaml"))
RUNNABLE = [p for p in EXAMPLES if p.name != "bert_ops.yaml"]  # the library has no model


def test_tensix_like_carries_the_wormhole_figures_and_is_a_valid_architecture():
    config = load_l1_config(ROOT / "hw_models" / "tensix_like.yaml")
    assert (config.l1_size_bytes, config.unreserved_base_bytes) == (1499136, 103712)
    assert (config.alignment_bytes, config.num_banks, config.bank_size_bytes) == (32, 64, 1395424)
    arch = load_architecture(str(ROOT / "hw_models" / "tensix_like.yaml"))
    assert arch.memory("L1").allocator["l1_size_bytes"] == 1499136


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_compare_runs_on_every_shipped_example(path, capsys):
    assert main(["l1", str(path), "--compare"]) == 0
    out = capsys.readouterr().out
    assert "heap" in out and "stack" in out and "pool" in out and "worst fragmentation" in out


def test_a_clash_exits_1_with_tt_metals_message(capsys):
    path = ROOT / "examples" / "l1_placement" / "clash_fragmentation.yaml"
    assert main([str(path), "--policy", "heap"]) == 1
    out = capsys.readouterr().out
    assert "L1 buffer allocated at 872448 and static circular buffer region ends at 988448" in out
    assert main([str(path), "--policy", "stack"]) == 0


def test_json_has_per_op_figures_failure_facts_and_the_timeline(capsys):
    path = ROOT / "examples" / "l1_placement" / "clash_fragmentation.yaml"
    main([str(path), "--compare", "--json"])
    data = json.loads(capsys.readouterr().out)
    heap, stack, pool = data["policies"]
    assert heap["failure"]["reason"] == "clash" and heap["failure"]["cb_region_end"] == 988448
    assert stack["failure"] is None and stack["summary"]["empty_at_end"]
    assert {"requirement_bytes", "max_fragmentation", "min_headroom_bytes"} <= set(stack["ops"][0])
    assert {"seq", "action", "address", "fragmentation", "largest_free_bytes"} <= set(
        stack["timeline"][0]
    )
    assert data["l1"]["l1_size_bytes"] == 1499136


def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "ops:\n  a:\n    intermediates: [{name: t, size_bytes: -1}]\nmodel:\n  steps: [{call: a}]\n"
    )
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert "ops.a.intermediates[0].size_bytes" in err and "Traceback" not in err


def test_plot_writes_a_png(tmp_path):
    path = ROOT / "examples" / "l1_placement" / "softmax.yaml"
    png = tmp_path / "map.png"
    assert main([str(path), "--compare", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_l1_map_legend_lies_inside_the_image(tmp_path, monkeypatch):
    # found: with one policy the legend's seven entries in one row were clipped at both edges
    import matplotlib.figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from cyclesim.cli import main

    figures = []
    save = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, *a, **k: (figures.append(fig), save(fig, *a, **k)))  # fmt: skip
    deep = Path(__file__).resolve().parents[2] / "examples" / "l1_placement" / "deep_composite.yaml"
    for policy in (["--policy", "heap"], ["--compare"]):
        assert main(["l1", str(deep), "--plot", str(tmp_path / "map.png"), "-q", *policy]) == 0
        fig = figures[-1]
        box = fig.legends[0].get_window_extent(FigureCanvasAgg(fig).get_renderer())  # closed
        assert 0 <= box.x0 and box.x1 <= fig.bbox.x1 and 0 <= box.y0, (policy, box, fig.bbox)

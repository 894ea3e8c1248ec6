"""``--plot FILE.png|svg`` and the memory timelines it draws: the inference timeline recorded by
``zoo.summarize(..., timeline=True)``, ``sizing.timeline.downsample``, and the plot itself
(skipped without matplotlib, the ``[plot]`` extra)."""

from __future__ import annotations

import importlib.util
import sys
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit import cli, zoo
from subclass_kit.sizing import SizingContext, timeline

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(not HAVE_MATPLOTLIB,
                                      reason='matplotlib is missing (pip install ".[plot]")')


def point(i, activations, phase="forward"):
    return {"at": f"op{i}", "phase": phase, "parameters": 100, "gradients": 0,
            "optimizer_states": 0, "activations": activations, "temporaries": 0}


# -- the inference timeline ----------------------------------------------------------------------
def test_summarize_records_one_point_per_op_with_the_peak():
    def chain(x):
        for _ in range(10):
            x = x * 2            # the previous x dies when the name is rebound
        return x

    x = sk.empty(1000, device="meta")
    s = zoo.summarize(chain, (x,), name="chain", timeline=True)
    assert len(s.timeline) == 10
    assert {p["at"] for p in s.timeline} == {"(top level): mul"}
    assert max(p["activations"] for p in s.timeline) == s.peak_activation_bytes == 3 * 4000
    assert s.timeline[0]["activations"] == 2 * 4000      # the input and the first result
    for p in s.timeline:
        assert set(p) == {"at", "phase", "parameters", "gradients", "optimizer_states",
                          "activations", "temporaries"}
        assert p["phase"] == "forward" and p["parameters"] == 0
    assert zoo.summarize(chain, (x,)).timeline is None    # not recorded unless asked


def test_timeline_of_a_model_carries_its_parameters():
    model = zoo.get_model("gpt2", n_layer=2)
    s = zoo.summarize(model, model.example_inputs(seq=8), timeline=True)
    assert all(p["parameters"] == s.parameter_bytes for p in s.timeline)
    assert any(p["at"].startswith("transformer.h.1: ") for p in s.timeline)
    assert max(timeline.total(p) for p in s.timeline) == \
        s.parameter_bytes + s.peak_activation_bytes


# -- downsampling ----------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=400), st.integers(3, 50))
def test_downsample_keeps_ends_and_peak(values, limit):
    points = [point(i, v) for i, v in enumerate(values)]
    out = timeline.downsample(points, limit)
    assert len(out) == min(len(points), limit) or len(out) <= limit
    assert out[0] is points[0] and out[-1] is points[-1]
    assert max(timeline.total(p) for p in out) == max(timeline.total(p) for p in points)
    order = [points.index(p) for p in out]
    assert order == sorted(set(order))                    # original order, no repeats
    if len(points) <= limit:
        assert out == points and out is not points


def test_downsample_limits():
    points = [point(i, i % 7) for i in range(10000)]
    out = timeline.downsample(points)
    assert len(out) <= timeline.MAX_POINTS == 2000
    with pytest.raises(ValueError, match="limit must be at least 3"):
        timeline.downsample(points, 2)


# -- the command line ------------------------------------------------------------------------------
def run(capsys, *argv):
    code = cli.main(["shapes", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@needs_matplotlib
@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<svg")])
def test_plot_writes_the_file(capsys, tmp_path, suffix, magic):
    path = tmp_path / ("timeline" + suffix)
    code, out, err = run(capsys, "gpt2", "--seq", "16", "--plot", str(path))
    assert code == 0, err
    assert out.startswith("model")
    data = path.read_bytes()
    assert magic in data[:4096]


def test_plot_names_the_extra_when_matplotlib_is_missing(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # import matplotlib fails
    path = tmp_path / "t.png"
    code, out, err = run(capsys, "gpt2", "--seq", "16", "--plot", str(path))
    assert code == 2 and out == ""
    assert 'pip install "subclass-kit[plot]"' in err
    assert not path.exists()


def test_plot_file_must_be_png_or_svg(capsys, tmp_path):
    code, _, err = run(capsys, "gpt2", "--plot", str(tmp_path / "t.pdf"))
    assert code == 2 and "must end in .png or .svg" in err


def test_plot_draws_the_training_timeline_when_there_is_one(monkeypatch):
    drawn = {}

    def draw(points, path, *, title=""):
        drawn.update(points=points, path=path, title=title)

    from subclass_kit.sizing import plot
    monkeypatch.setattr(plot, "draw", draw)
    summary = types.SimpleNamespace(timeline=[point(0, 1)])
    train = [point(i, i, "backward") for i in range(5000)]
    ctx = SizingContext(model=None, inputs=(), name="m", args=None, summary=summary,
                        results={"train": {"peak": 1, "timeline": train}})
    cli._plot("x.png", ctx)
    assert drawn["title"] == "m: training step" and len(drawn["points"]) <= 2000
    assert drawn["points"][-1] is train[-1]
    ctx.results = {}
    cli._plot("x.png", ctx)
    assert drawn["title"] == "m: inference forward" and drawn["points"] == summary.timeline


@needs_matplotlib
def test_plot_into_a_missing_folder_is_a_usage_error(capsys, tmp_path):
    code, out, err = run(capsys, "gpt2", "--seq", "8", "--plot",
                         str(tmp_path / "no" / "such" / "t.png"))
    assert code == 2 and out == ""
    assert "--plot: cannot write" in err


@needs_matplotlib
def test_plot_with_json_and_a_user_function(capsys, tmp_path):
    import json
    import os
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "examples", "custom_model.py")
    path = tmp_path / "mlp.svg"
    code, out, err = run(capsys, f"{example}:build", "--plot", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["output_shape"][-1] == 10
    assert path.stat().st_size > 0


@needs_matplotlib
def test_draw_a_training_like_timeline(tmp_path):
    """Three phases, buffers and a module name at the peak (modes.MemTracker's points)."""
    from subclass_kit.sizing import plot
    points = []
    for i, phase in enumerate(["forward"] * 5 + ["backward"] * 5 + ["optimizer"] * 2):
        points.append({"at": f"op{i}", "module": "layers.0", "phase": phase, "parameters": 4,
                       "buffers": 1, "gradients": i if phase != "forward" else 0,
                       "optimizer_states": 8 if phase == "optimizer" else 0,
                       "activations": 12 - i, "temporaries": i % 2})
    assert timeline.total(points[11]) == 4 + 1 + 11 + 8 + 1 + 1
    path = tmp_path / "train.svg"
    plot.draw(points, str(path), title="m: training step")
    text = path.read_text()
    assert "layers.0: op" in text and "optimizer" in text and "buffers" in text
    with pytest.raises(ValueError, match="no points"):
        plot.draw([], str(tmp_path / "empty.png"))

"""``--plot FILE.png|svg``: draw a memory timeline (``sizing.timeline``) as stacked areas, one per
category (parameters, gradients, optimizer states, activations, temporaries), with the peak
marked and the phases (forward / backward / optimizer) shaded.

matplotlib is an optional extra (``pip install "subclass-kit[plot]"``); it is imported only
here and only when a plot is asked for, with the non-interactive Agg backend.
"""

from __future__ import annotations

__all__ = ["INSTALL", "PlotUnavailable", "require", "draw"]

INSTALL = 'pip install "subclass-kit[plot]"'


class PlotUnavailable(ImportError):
    """matplotlib cannot be imported: the message says how to install the extra."""


def require():
    """The ``matplotlib.pyplot`` module (Agg backend); raises PlotUnavailable naming the
    extra to install when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")     # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise PlotUnavailable(f"--plot needs matplotlib ({e}); install it with {INSTALL}") \
            from None
    return plt


_PHASE_COLOURS = {"forward": "#e8f0fe", "backward": "#fdecea", "optimizer": "#e6f4ea"}


def draw(points: list, path: str, *, title: str = "") -> None:
    """Draw ``points`` (timeline dicts, already downsampled) to ``path``; the format follows the
    file extension (.png or .svg). Raises ValueError for an empty timeline, PlotUnavailable
    without matplotlib, OSError when the file cannot be written."""
    from .timeline import CATEGORIES, total

    if not points:
        raise ValueError("draw(): the timeline has no points")
    plt = require()
    xs = list(range(len(points)))
    gib = 1024 ** 3
    series = [[p.get(c, 0) / gib for p in points] for c in CATEGORIES]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    try:
        # Phase bands behind the areas.
        start = 0
        for i in range(1, len(points) + 1):
            if i == len(points) or points[i].get("phase") != points[start].get("phase"):
                phase = points[start].get("phase")
                ax.axvspan(start - 0.5, i - 0.5, color=_PHASE_COLOURS.get(phase, "#f4f4f4"),
                           zorder=0, lw=0)
                ax.text((start + i - 1) / 2, 1.0, phase or "", transform=ax.get_xaxis_transform(),
                        ha="center", va="bottom", fontsize=8)
                start = i
        used = [(c.replace("_", " "), s) for c, s in zip(CATEGORIES, series) if any(s)]
        ax.stackplot(xs, *[s for _, s in used], labels=[c for c, _ in used], zorder=2,
                     alpha=0.85)
        peak = max(xs, key=lambda i: total(points[i]))
        peak_gib = total(points[peak]) / gib
        where = points[peak].get("at", "?")
        if points[peak].get("module"):       # training timelines name the module apart
            where = f"{points[peak]['module']}: {where}"
        ax.axhline(peak_gib, color="black", lw=0.8, ls="--", zorder=3,
                   label=f"peak {peak_gib:.2f} GiB at {where}")
        ax.plot([peak], [peak_gib], "kv", ms=5, zorder=4)
        ax.set_xlim(-0.5, len(points) - 0.5)
        ax.set_ylim(0, peak_gib * 1.15 or 1)
        ax.set_xlabel("moment of the run (op order)")
        ax.set_ylabel("GiB live")
        ax.set_title(title, pad=14)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)   # beside the plot
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)

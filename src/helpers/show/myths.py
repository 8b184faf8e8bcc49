"""Lesson 13's verdicts and figures: a recorder of checked verdicts, small work on this CPU next to
published GPU-against-CPU timings, and a verdict board.

matplotlib is imported inside each function so ``import helpers`` stays cheap; each figure function
returns ``(fig, ax)`` (``plot_small_work``: ``(fig, (ax, ax_published))``) and the notebook calls
``plt.show()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, NamedTuple, Sequence

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["PUBLISHED_GPU_VS_CPU", "VERDICT_COLORS", "PublishedTiming", "Verdicts", "draw_verdict_board",
           "plot_small_work"]


class PublishedTiming(NamedTuple):
    """One published GPU-against-CPU timing, as its report prints it (seconds, for ``per``)."""

    source: str         # "pytorch/pytorch#42265"
    url: str
    year: int
    work: str           # what was timed
    gpu: str            # the GPU and PyTorch version, as far as the report names them
    cpu_s: float
    gpu_s: float
    per: str            # what the two times are for
    synchronised: bool  # the GPU loop ended with torch.cuda.synchronize() before the clock stopped


#: Small matrix inverses timed on a GPU and on the CPU, from two PyTorch issues (their descriptions).
#: #42265 prints per-call times in ms ("GPU Time: 8.78560 ms / CPU Time: 0.07149 ms", then 17.25289 and
#: 9.54982 ms at 1024x1024), from a loop of 100 calls closed by torch.cuda.synchronize(); it does not
#: name the GPU. #2219 prints the totals of 100 calls in s ("cpu: 0.003675 / gpu: 2.056742"), timed with
#: time.time(), no warm-up, no synchronisation, on a GeForce GTX 1080 with PyTorch 0.1.12.
PUBLISHED_GPU_VS_CPU = (
    PublishedTiming("pytorch/pytorch#42265", "https://github.com/pytorch/pytorch/issues/42265", 2020,
                    "torch.inverse, 4x4", "a GPU the report does not name", 0.07149e-3, 8.78560e-3,
                    "per call", True),
    PublishedTiming("pytorch/pytorch#42265", "https://github.com/pytorch/pytorch/issues/42265", 2020,
                    "torch.inverse, 1024x1024", "a GPU the report does not name", 9.54982e-3, 17.25289e-3,
                    "per call", True),
    PublishedTiming("pytorch/pytorch#2219", "https://github.com/pytorch/pytorch/issues/2219", 2017,
                    "torch.inverse, 3x3", "GeForce GTX 1080, PyTorch 0.1.12", 0.003675, 2.056742,
                    "for 100 calls", False),
)

VERDICT_COLORS = {"true": "#b7e1b0", "false": "#f4b6b6", "it depends": "#fde3a7"}


class Verdicts(list):
    """The lesson's verdicts, one ``(claim, verdict, evidence)`` tuple per call, for the table and board.

    ``verdicts(claim, answer, evidence, **facts)`` checks that every fact the verdict rests on holds
    (``AssertionError`` naming the first that does not), records the verdict and prints it in one
    line. Introduced in lesson 13.
    """

    ANSWERS = ("true", "false", "it depends")

    def __call__(self, claim: str, answer: str, evidence: str, **facts: object) -> None:
        if answer not in self.ANSWERS:
            raise ValueError(f"answer must be one of {self.ANSWERS}, not {answer!r}")
        failed = [name for name, holds in facts.items() if not holds]
        if failed:
            raise AssertionError(f"{claim!r}: the evidence does not hold: {', '.join(failed)}")
        self.append((claim, answer, evidence))
        print(f"Verdict: {answer}. {evidence}")


def plot_small_work(cpu: Mapping[int, Sequence[float]],
                    published: Sequence[PublishedTiming] = PUBLISHED_GPU_VS_CPU,
                    cpu_label: str = "this CPU") -> tuple[Figure, tuple[Axes, Axes]]:
    """Left: microseconds per ``torch.add`` call against the number of elements, on log axes, where the
    notebook ran. Right: published GPU time over CPU time, one bar per report, drawn as someone else's data.

    ``cpu`` maps a size to the medians (seconds) of the repeated rounds: each round a small dot, the best
    round a large one. ``published`` (default: two PyTorch issues on small ``torch.inverse``) is drawn
    in red; a report timed without synchronisation is hatched and says so. Introduced in lesson 13.
    """
    import matplotlib.pyplot as plt

    fig, (ax, ax_pub) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": (3, 2)})
    sizes = sorted(cpu)
    for n in sizes:
        ax.loglog([n] * len(cpu[n]), [t * 1e6 for t in cpu[n]], ".", color="#1f77b4", alpha=0.5)
    best = [min(cpu[n]) * 1e6 for n in sizes]
    ax.loglog(sizes, best, "o-", color="#1f77b4",
              label=f"{cpu_label}: measured here (best round; dots: all rounds)")
    ax.set_xlabel("elements added (bfloat16)")
    ax.set_ylabel("microseconds per torch.add call")
    ax.set_title("Measured here: a fixed cost per call", fontsize="medium")
    ax.legend(fontsize="small", loc="best")

    ratios = [p.gpu_s / p.cpu_s for p in published]
    rows = range(len(published))[::-1]
    bars = ax_pub.barh(list(rows), ratios, color="#f4b6b6", edgecolor="#d62728")
    for bar, p, r in zip(bars, published, ratios, strict=True):
        if not p.synchronised:
            bar.set_hatch("//")
        ax_pub.annotate(f"{r:.3g}x" + ("" if p.synchronised else ", not synchronised"),
                        (r, bar.get_y() + bar.get_height() / 2), textcoords="offset points", xytext=(3, 0),
                        va="center", fontsize="small", color="#d62728")
    ax_pub.set_yticks(list(rows), [f"{p.work.replace('torch.', '')}\n{p.source.split('/')[-1]} ({p.year})\n"
                                   f"{p.gpu.split(',')[0]}" for p in published], fontsize="small")
    ax_pub.set_xscale("log")
    ax_pub.set_xlim(0.5, max(ratios) * 20)
    ax_pub.axvline(1, color="black", linewidth=0.8)
    ax_pub.set_xlabel("GPU time / CPU time (1: same time)")
    ax_pub.set_title("Published, not measured here", fontsize="medium")
    urls = sorted({p.url for p in published})
    fig.text(0.99, 0.01, "right: someone else's data, from " + ", ".join(urls), ha="right",
             fontsize="x-small")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig, (ax, ax_pub)


def draw_verdict_board(verdicts: Sequence[tuple[str, str, str]]) -> tuple[Figure, Axes]:
    """One row per claim: the claim, its verdict (coloured) and the lessons that explain it, read
    from the ``(claim, verdict, evidence)`` records the lesson collected. A schematic summary,
    not data. Introduced in lesson 13.
    """
    import re

    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    n = len(verdicts)
    fig, ax = plt.subplots(figsize=(10, 0.42 * n + 0.9))
    for row, (claim, answer, evidence) in enumerate(verdicts):
        y = n - 1 - row
        lessons = re.findall(r"\(lessons? ([^)]*)\)", evidence)
        ax.text(0.0, y, f"13.{row + 1}  {claim.replace('`', '')}", va="center", fontsize="small")
        ax.add_patch(Rectangle((7.1, y - 0.38), 1.3, 0.76, facecolor=VERDICT_COLORS[answer],
                               edgecolor="black", linewidth=0.6))
        ax.text(7.75, y, answer, ha="center", va="center", fontsize="small")
        named = lessons[-1] if lessons else ""
        plural = "lessons" if any(sep in named for sep in (",", " to ", " and ")) else "lesson"
        ax.text(8.6, y, f"{plural} {named}" if named else "", va="center", fontsize="small")
    ax.set_xlim(0, 10.5)
    ax.set_ylim(-0.6, n - 0.4)
    ax.axis("off")
    ax.set_title("The twelve claims and their verdicts (schematic summary of this lesson)", fontsize="medium")
    return fig, ax

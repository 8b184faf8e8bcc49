"""Build the workshop kit from the committed notebooks: a slide deck per lesson and a one-page handout.

    python -m tools.workshop write   # rewrite whatever is out of date under docs/workshop/, list it
    python -m tools.workshop check   # write nothing; exit 1 and list what is out of date

Everything comes from the notebooks' cells and stored outputs; nothing here is kept by hand but
the choice of cells. DECKS says, per lesson, which cells (by cell id) make which slide; HANDOUT
says which cells the handout quotes. A part is "ID" (the whole cell: a markdown cell rendered, a
code cell's source and stored outputs) or "ID:SELECTOR":

    code      a code cell's source          output    its stored text and pictures
    text      its stored text only          image     its stored pictures only
    text:2-5  lines 2 to 5 of its stored text
    numbers   the list items of a markdown cell that carry a number
    exercise  a markdown cell from its "**N. Kind.**" exercise prompt to the end
    vote      a markdown cell's headings and its "**Vote:**" line
    list      its lists                     fence     its fenced code blocks
    2, 1-3    its top-level blocks (paragraphs, lists, headings...) by position, from 1

The files work offline: styles and scripts are inline, pictures are data: URIs, links are dropped
(their text stays) and LaTeX is turned into plain text with superscripts.
"""

from __future__ import annotations

import html
import json
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from tools.course import DETAILS, EXERCISE, LAUNCH, MAP, NAV, SETUP_FIRST_LINE, TITLE, describe

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "docs" / "workshop"


@dataclass(frozen=True)
class Slide:
    kind: str  # demo, text, picture, numbers, exercise, vote or verdict (a title slide comes first)
    parts: tuple[str, ...]
    heading: str = ""  # where the first part brings no heading of its own and the default will not do


def S(kind: str, *parts: str, heading: str = "") -> Slide:  # noqa: N802 - reads as a table row
    return Slide(kind, parts, heading)


# Per lesson, the slides after its title slide. The opening demonstration is the lesson's first
# section after "What you will learn"; the sections follow docs/workshop.md's plans.
DECKS: dict[str, list[Slide]] = {
    "00": [
        S("demo", "hook-intro", "hook-run:code"),
        S("demo", "hook-run:text", "hook-preview:1"),
        S("numbers", "hook-check-intro", "hook-check:text", "hook-preview:2"),
        S("picture", "l00-sources-figure:image"),
        S("text", "c05", "c06:code"),
        S("exercise", "setup-check-intro", "setup-check-run:code"),
    ],
    "01": [
        S("demo", "3b74687b", "c20", "252820d0"),
        S("demo", "c19", "c22"),
        S("exercise", "l01-ex1"),
        S("picture", "l01-s14", "c26:image"),
        S("numbers", "dcf9f987:numbers", "c14:text", "c26:text"),
        S("exercise", "c53"),
    ],
    "02": [
        S("demo", "e560db02", "1d15fc0f", "b4219e9f:1"),
        S("picture", "c03:1-2", "c04:image"),
        S("exercise", "c401569b"),
        S("demo", "l02-atomics-intro:1-2", "c13:text"),
        S("demo", "c22:1-2", "c23:text"),
        S("numbers", "c03:3", "c08:text"),
        S("exercise", "c33"),
    ],
    "03": [
        S("demo", "ae1de24a", "c19", "e050ae43:1"),
        S("picture", "e050ae43:2-3", "l03-formats-fig:image"),
        S("numbers", "137aea1a:numbers", "l03-formats-fig:text"),
        S("exercise", "l03-ex3"),
        S("exercise", "l03-ex4"),
    ],
    "04": [
        S("demo", "c04:1", "c05:code"),
        S("demo", "c06:text", "c07", "c08:text"),
        S("picture", "l04-matrix-fig:image"),
        S("exercise", "c40"),
        S("demo", "c23", "c20"),
        S("numbers", "l04-serial-path:1", "l04-cublas-config"),
        S("exercise", "46a6b7ff"),
    ],
    "05": [
        S("demo", "c03", "c04:code"),
        S("demo", "c04:text:1-2"),
        S("picture", "l05-seed-reach-fig:image"),
        S("numbers", "c10:text"),
        S("text", "c21"),
        S("demo", "l05-when-draws-demo:code"),
        S("demo", "l05-when-draws-demo:output"),
        S("exercise", "dcab46dc"),
        S("exercise", "6dd8c41a"),
    ],
    "06": [
        S("demo", "c03", "c04", "c07"),
        S("demo", "l06-where:1-2", "c08"),
        S("picture", "c11", "a26a0149:image"),
        S("demo", "l06-same-device", "c16:text"),
        S("numbers", "l06-why-atol", "c27:text"),
        S("exercise", "838273a4", "96f1f2ce"),
        S("exercise", "3bbbc43b"),
    ],
    "07": [
        S("demo", "c04", "c12"),
        S("picture", "l07-72-md", "l07-fig-contents:image"),
        S("demo", "c09"),
        S("numbers", "l07-summary:numbers"),
        S("exercise", "2f0932d1"),
        S("exercise", "c29:exercise"),
    ],
    "08": [
        S("demo", "c03", "c04"),
        S("text", "0b263e9b:2"),
        S("exercise", "c09:exercise"),
        S("picture", "c19:1-2", "c20:image"),
        S("numbers", "c09:2", "c20:text"),
        S("exercise", "ex2"),
        S("exercise", "97542d2b:exercise"),
    ],
    "09": [
        S("demo", "c03", "561f89e5", "f5ba7a56:1"),
        S("picture", "e7047a50", "c26:image"),
        S("numbers", "l09-summary-int8:numbers", "9207a8b8:numbers", "c26:text"),
        S("exercise", "c30:exercise"),
        S("exercise", "533f9641"),
        S("exercise", "6c24b419"),
    ],
    "10": [
        S("demo", "eaf3cb1c", "14068fbb:code", "14068fbb:text"),
        S("text", "c03:1-3"),
        S("exercise", "l10-ex1"),
        S("picture", "7f17dd9b:image", "39e88a3d:1"),
        S("numbers", "c04:text"),
        S("text", "l10-recipe:1-3"),
        S("exercise", "a29937c9"),
    ],
    "11": [
        S("demo", "e1cf1b61", "c06", "3018a84f:1"),
        S("picture", "c07:1-2", "c08:image"),
        S("exercise", "c19:exercise"),
        S("numbers", "c20:text", "de6055f1:2"),
        S("exercise", "c46"),
    ],
    "12": [
        S("demo", "3e4eb376", "a448d297:text"),
        S("picture", "a3802a2f:1", "7abffbed:image"),
        S("numbers", "fdafe2f6:text", "66795b81:1"),
        S("text", "l12-checklist"),
        S("exercise", "l12-hunt-1:exercise"),
        S("exercise", "l12-hunt-2b"),
        S("exercise", "l12-hunt-3"),
    ],
    # A quiz: a vote before the cell runs, then its verdict. The plans take 13.1, 13.5 and 13.10; the
    # others are there for a room with time to spare (docs/instructor/13.md).
    "13": [
        S("vote", "c04:vote"),
        S("verdict", "c05:text"),
        S("vote", "c07:vote"),
        S("verdict", "c08:text", "c08d:text"),
        S("vote", "c14:vote"),
        S("verdict", "c15:text"),
        S("vote", "c17:vote"),
        S("verdict", "c18:text"),
        S("vote", "c20:vote"),
        S("exercise", "e6389585"),
        S("verdict", "c21:text"),
        S("vote", "c22:vote"),
        S("verdict", "c23:text"),
        S("vote", "c25:vote"),
        S("verdict", "c26:text"),
        S("vote", "c27:vote"),
        S("verdict", "c28:text"),
        S("vote", "c29:vote"),
        S("verdict", "c30:text"),
        S("picture", "c33", "c34:image"),
    ],
    "14": [
        S("demo", "l14-s1", "l14-compile:code"),
        S("numbers", "l14-compile:text", "l14-s1-read:1"),
        S("picture", "l14-s1-read:2", "l14-once:image"),
        S("demo", "l14-s2", "l14-sdpa:text"),
        S("picture", "l14-s3", "l14-amp:image"),
        S("exercise", "l14-s3-rule:exercise"),
        S("picture", "l14-s4-read:2", "l14-shards:image"),
        S("demo", "l14-s5", "l14-batch:text"),
        S("exercise", "l14-s7-read:exercise"),
    ],
}


@dataclass(frozen=True)
class Block:
    title: str
    notebook: str  # under notebooks/
    parts: tuple[str, ...]
    column: int  # 0: across the page, above the two columns (code too long for a column); 1 or 2


# The handout quotes the cells that teach each recipe, so the two cannot disagree.
HANDOUT = [
    Block("A reproducibility preamble", "appendix/recipes.ipynb", ("r02:fence", "r03:code"), 0),
    Block("Before and after a device move", "appendix/recipes.ipynb", ("r19:list",), 1),
    Block("How to size a tolerance", "10_validating_across_devices.ipynb", ("c03:2-3",), 1),
    Block("Debugging a mismatch", "12_debugging_a_mismatch.ipynb", ("l12-checklist:2",), 2),
]

# ---------------------------------------------------------------- reading the notebooks


@dataclass(frozen=True)
class Notebook:
    path: Path
    name: str  # its path under notebooks/
    cells: list[dict]

    def cell(self, cell_id: str) -> dict:
        for cell in self.cells:
            if cell.get("id") == cell_id:
                return cell
        raise ValueError(f"{self.name}: no cell with id {cell_id!r} (named in tools/workshop.py)")

    def section(self, cell_id: str) -> tuple[str, str]:
        """Where a cell sits: its section for a footer ("section 1.4", or the heading of an unnumbered
        one), and the nearest heading above it or in it, of any level below the title."""
        section = nearest = ""
        for cell in self.cells:
            if cell["cell_type"] == "markdown":
                for level, heading in re.findall(r"^(##+) (.+)$", source(cell), flags=re.M):
                    nearest = heading.strip()
                    section = nearest if level == "##" else section
            if cell.get("id") == cell_id:
                break
        number = re.match(r"(\d+(?:\.\d+)?)\.? ", section)
        return (f"section {number.group(1)}" if number else section), nearest


def source(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def read(notebooks: Path, name: str) -> Notebook:
    path = notebooks / name
    return Notebook(path, name, json.loads(path.read_text(encoding="utf-8"))["cells"])


def lesson_name(notebooks: Path, number: str) -> str:
    found = sorted(notebooks.glob(f"{number}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"lesson {number}: expected one notebooks/{number}_*.ipynb, found {len(found)}")
    return found[0].name


# ---------------------------------------------------------------- markdown and maths

SYMBOLS = {
    "times": "×", "cdot": "·", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠",
    "approx": "≈", "sum": "Σ", "dots": "…", "ldots": "…", "cdots": "⋯", "infty": "∞", "pm": "±",
    "gamma": "γ", "epsilon": "ε", "varepsilon": "ε", "delta": "δ", "mu": "μ", "sigma": "σ", "pi": "π",
    "lambda": "λ", "to": "→", "rightarrow": "→", "div": "÷", "lvert": "|", "rvert": "|", "lVert": "‖",
    "rVert": "‖", "left": "", "right": "", "quad": " ", "qquad": " ", "alpha": "α", "beta": "β", "theta": "θ",
    "leftarrow": "←", "lceil": "⌈", "rceil": "⌉", "mp": "∓",
}


def math_html(tex: str) -> str:
    """LaTeX as readable HTML text: symbols, superscripts and subscripts, no typesetting."""
    text = html.escape(tex, quote=False)
    text = re.sub(r"\\[,;: ]|~", " ", text)
    text = re.sub(r"\\([{}%|])", lambda m: "‖" if m.group(1) == "|" else m.group(1), text)
    text = re.sub(r"(?<=[\w)])\\(ln|log|exp|min|max)\b", r" \\\1", text)  # 4\ln 2: 4 ln 2
    text = re.sub(r"\\hat\s*\{?(\w)\}?", "\\1\u0302", text)  # a circumflex over the letter
    before = None
    while before != text:
        before = text
        text = re.sub(r"\\(?:text|mathrm|operatorname|texttt|mathbf|mathit)\{([^{}]*)\}", r"\1", text)
        text = re.sub(r"\\sqrt\{([^{}]*)\}", lambda m: "√" + (m.group(1) if len(m.group(1)) <= 1 else
                                                           f"({m.group(1)})"), text)
        text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text)
        text = re.sub(r"\^\{([^{}]*)\}", r"<sup>\1</sup>", text)
        text = re.sub(r"_\{([^{}]*)\}", r"<sub>\1</sub>", text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: SYMBOLS.get(m.group(1), m.group(1)), text)
    text = re.sub(r"\^(-?\w)", r"<sup>\1</sup>", text)
    text = re.sub(r"_(\w)", r"<sub>\1</sub>", text)
    return text.replace("{", "").replace("}", "")


def math_plain(tex: str) -> str:
    """The same for the PDF: superscripts written as ^x."""
    text = math_html(tex)
    text = re.sub(r"<sup>([^<]*)</sup>", lambda m: "^" + (m.group(1) if len(m.group(1)) == 1 else
                                                         f"({m.group(1)})"), text)
    text = re.sub(r"<sub>([^<]*)</sub>", r"\1", text)
    return html.unescape(text)


def markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table").use(dollarmath_plugin, double_inline=True)
    md.add_render_rule("math_inline", lambda self, tokens, i, options, env: math_html(tokens[i].content))
    md.add_render_rule("math_inline_double",
                       lambda self, tokens, i, options, env: math_html(tokens[i].content))
    md.add_render_rule("math_block", lambda self, tokens, i, options, env:
                       f'<p class="math">{math_html(tokens[i].content)}</p>\n')
    # links are dropped, their text kept: the files work offline and outside the repository
    md.add_render_rule("link_open", lambda self, tokens, i, options, env: "")
    md.add_render_rule("link_close", lambda self, tokens, i, options, env: "")
    md.add_render_rule("image", lambda self, tokens, i, options, env: html.escape(tokens[i].content))
    return md


MD = markdown()
NUMBER = re.compile(r"(?<![\w.\-])\d")
NOT_A_NUMBER = re.compile(r"`[^`]*`|\]\([^)]*\)|\b(?:lessons?|sections?) [\d., and]+|\(\d\d\)")


def blocks(text: str) -> list[tuple[str, str]]:
    """The top-level blocks of a markdown text: (token type, its source lines)."""
    lines = text.splitlines()
    return [(t.type, "\n".join(lines[t.map[0]:t.map[1]])) for t in MD.parse(text)
            if t.level == 0 and t.map and t.nesting >= 0]


def list_items(block: str) -> list[str]:
    lines = block.splitlines()
    return ["\n".join(lines[t.map[0]:t.map[1]]) for t in MD.parse(block)
            if t.type == "list_item_open" and t.level == 1]


def select_markdown(text: str, selector: str, where: str) -> str:
    found = blocks(DETAILS.sub("", text))
    if not selector:
        picked = [b for _, b in found]
    elif selector == "numbers":
        picked = [i for kind, b in found if kind.endswith("list_open") for i in list_items(b)
                  if NUMBER.search(NOT_A_NUMBER.sub("", i))]
    elif selector == "exercise":
        starts = [k for k, (kind, b) in enumerate(found) if kind == "paragraph_open" and EXERCISE.match(b)]
        picked = [b for _, b in found[starts[0]:]] if starts else []
    elif selector == "vote":
        picked = [b for kind, b in found if kind == "heading_open" or "**Vote" in b]
    elif selector == "list":
        picked = [b for kind, b in found if kind.endswith("list_open")]
    elif selector == "fence":
        picked = [b for kind, b in found if kind == "fence"]
    elif re.fullmatch(r"\d+(-\d+)?", selector):
        first, _, last = selector.partition("-")
        picked = [b for _, b in found[int(first) - 1:int(last or first)]]
    else:
        raise ValueError(f"{where}: unknown selector {selector!r}")
    if not picked:
        raise ValueError(f"{where}: selects nothing")
    return "\n\n".join(picked)


# ---------------------------------------------------------------- parts of a cell

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
WIDGET = "application/vnd.jupyter.widget-view+json"  # its text is a placeholder for the widget


@dataclass(frozen=True)
class Piece:
    kind: str  # markdown, code, text or image
    content: str  # markdown source, code, output text, or a data: URI


def outputs(cell: dict, want: set[str]) -> list[Piece]:
    pieces = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if out.get("output_type") == "stream" and "text" in want:
            pieces.append(Piece("text", ANSI.sub("", source({"source": out.get("text", "")}))))
        elif "image/png" in data and "image" in want:
            png = "".join(data["image/png"]).replace("\n", "")
            pieces.append(Piece("image", "data:image/png;base64," + png))
        elif "text/plain" in data and "image/png" not in data and WIDGET not in data and "text" in want:
            pieces.append(Piece("text", ANSI.sub("", source({"source": data["text/plain"]}))))
    merged: list[Piece] = []  # consecutive text outputs read as one block
    for piece in pieces:
        if merged and piece.kind == merged[-1].kind == "text":
            merged[-1] = Piece("text", merged[-1].content.rstrip("\n") + "\n" + piece.content)
        else:
            merged.append(piece)
    return merged


def pieces(nb: Notebook, part: str) -> list[Piece]:
    cell_id, _, selector = part.partition(":")
    selector, _, lines = selector.partition(":")
    cell = nb.cell(cell_id)
    where = f"{nb.name}, cell {part!r}"
    text = source(cell)
    if text.startswith((NAV, MAP, LAUNCH, SETUP_FIRST_LINE)):
        raise ValueError(f"{where}: a generated navigation, launch or set-up cell")
    if cell["cell_type"] == "markdown":
        return [Piece("markdown", select_markdown(text, selector, where))]
    if selector in ("numbers", "exercise", "vote", "list") or re.fullmatch(r"[\d-]+", selector):
        raise ValueError(f"{where}: {selector!r} selects from a markdown cell, and this is a code cell")
    if selector == "fence":
        raise ValueError(f"{where}: 'fence' selects from a markdown cell")
    want = {"": {"code", "text", "image"}, "code": {"code"}, "output": {"text", "image"}, "text": {"text"},
            "image": {"image"}}.get(selector)
    if want is None:
        raise ValueError(f"{where}: unknown selector {selector!r}")
    found = [Piece("code", text)] if "code" in want else []
    found += outputs(cell, want)
    if not found or (selector and not any(p.kind in want for p in found)):
        raise ValueError(f"{where}: the cell has no stored {selector or 'content'}")
    if lines:
        first, _, last = lines.partition("-")
        if selector != "text" or not re.fullmatch(r"\d+(-\d+)?", lines):
            raise ValueError(f"{where}: only 'text' takes a range of lines, such as text:1-2")
        kept = "\n".join(found[0].content.splitlines()[int(first) - 1:int(last or first)])
        found = [Piece("text", kept)]
    return found


def piece_html(piece: Piece, alt: str) -> str:
    if piece.kind == "markdown":
        return MD.render(piece.content)
    if piece.kind == "image":
        return f'<img src="{piece.content}" alt="{html.escape(alt)}">\n'
    text = html.escape(piece.content.rstrip())
    if piece.kind == "text":  # lesson 13's verdicts stand out
        text = re.sub(r"^(Verdict: .*)$", r"<strong>\1</strong>", text, flags=re.M)
    return f'<pre class="{piece.kind}"><code>{text}</code></pre>\n'


# ---------------------------------------------------------------- slides

SLIDE_CSS = """
:root { --w: min(100vw, 177.78vh); }
* { box-sizing: border-box; }
html, body { margin: 0; background: #222; }
body { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; color: #111; }
section { --fit: 1; display: none; flex-direction: column; width: var(--w); height: calc(var(--w) * 0.5625);
  margin: 0 auto; padding: 3% 4% 0; background: #fff; overflow: hidden;
  font-size: calc(var(--w) / 44 * var(--fit)); line-height: 1.3; }
section.current { display: flex; }
section .body { flex: 1; min-height: 0; overflow: hidden; display: flex; flex-direction: column; }
section.title .body { display: flex; flex-direction: column; justify-content: center; }
h1 { font-size: 2.1em; margin: 0 0 .5em; }
h2 { font-size: 1.45em; margin: 0 0 .4em; color: #1a4d80; overflow-wrap: anywhere; }
h3 { font-size: 1.15em; margin: .3em 0; }
p, ul, ol { margin: .35em 0; }
li { margin: .15em 0; }
.why { font-size: 1.25em; font-style: italic; }
.hardware { color: #555; }
pre { font-family: "DejaVu Sans Mono", Consolas, Menlo, monospace; font-size: .68em; line-height: 1.25;
  margin: .4em 0; padding: .4em .6em; white-space: pre-wrap; overflow-wrap: anywhere; background: #f3f3f0; }
pre.code { border-left: .25em solid #1a4d80; }
pre.text { background: #fff; border-left: .25em solid #999; }
.verdict pre.text { font-size: .85em; }
code { font-family: "DejaVu Sans Mono", Consolas, Menlo, monospace; font-size: .9em; }
pre code { font-size: 1em; }
table { border-collapse: collapse; font-size: .8em; }
th, td { border-bottom: 1px solid #ccc; padding: .1em .5em; text-align: left; }
.images { flex: 1 1 0; min-height: 35%; display: flex; gap: 1em; justify-content: center; margin: .3em 0; }
.images img { flex: 1 1 0; min-width: 0; height: 100%; object-fit: contain; }
.vote h2 { font-size: 2em; margin-top: 2em; }
footer { display: flex; justify-content: space-between; font-size: .55em; color: #777;
  border-top: 1px solid #ddd; padding: .4em 0 .6em; margin-top: .3em; }
@media print {
  :root { --w: 254mm; }
  @page { size: 254mm 142.875mm; margin: 0; }
  html, body { background: #fff; }
  section { display: flex !important; break-after: page; page-break-after: always; }
}
"""

# Arrow keys, space and PageDown/PageUp move; Home/End jump; the address keeps the slide number.
# Each slide's type shrinks (--fit) until its content fits the 16:9 frame.
SLIDE_JS = """
const slides = Array.from(document.querySelectorAll("section"));
let at = 0;
function show(n) {
  at = Math.max(0, Math.min(slides.length - 1, n));
  slides.forEach((s, k) => s.classList.toggle("current", k === at));
  history.replaceState(null, "", "#" + (at + 1));
}
function fit() {
  slides.forEach((s) => {
    const shown = s.classList.contains("current"), body = s.querySelector(".body");
    s.classList.add("current");
    let f = 1;
    s.style.setProperty("--fit", f);
    const over = () => body.scrollHeight > body.clientHeight + 1 || body.scrollWidth > body.clientWidth + 1;
    while (over() && f > 0.45) { f -= 0.05; s.style.setProperty("--fit", f); }
    s.classList.toggle("current", shown);
  });
}
document.addEventListener("keydown", (e) => {
  const step = {ArrowRight: 1, ArrowDown: 1, PageDown: 1, " ": 1,
                ArrowLeft: -1, ArrowUp: -1, PageUp: -1}[e.key];
  if (step) { show(at + step); e.preventDefault(); }
  else if (e.key === "Home") show(0);
  else if (e.key === "End") show(slides.length - 1);
});
show((parseInt(location.hash.slice(1), 10) || 1) - 1);
window.addEventListener("load", fit);
window.addEventListener("resize", fit);
window.addEventListener("beforeprint", fit);
"""


def first_heading(markdown_text: str) -> bool:
    return markdown_text.lstrip().startswith("#")


def deck(number: str, notebooks: Path = NOTEBOOKS, slides: list[Slide] | None = None) -> str:
    """Lesson ``number``'s slide deck, one self-contained HTML file."""
    name = lesson_name(notebooks, number)
    nb = read(notebooks, name)
    slides = DECKS[number] if slides is None else slides
    lesson = describe(nb.path)  # its title, one-line summary and Hardware line, from its first cell
    title, summary, hardware = lesson.title, lesson.summary, lesson.hardware
    total = len(slides) + 1
    where = f"notebooks/{name}"

    def section(kind: str, inner: str, k: int, place: str, stored: bool = False) -> str:
        label = " · ".join([where] + [place] * bool(place) + ["outputs as stored in the notebook"] * stored)
        foot = f"<footer><span>{html.escape(label)}</span>"
        foot += f"<span>{k} / {total}</span></footer>"
        return f'<section class="{kind}" id="s{k}"><div class="body">\n{inner}</div>{foot}</section>\n'

    out = [section("title", f"<h1>{html.escape(f'{number} · {title}')}</h1>\n{MD.render(summary)}"
                            .replace("<p>", '<p class="why">', 1)
                   + MD.render(f"**Hardware:** {hardware}").replace("<p>", '<p class="hardware">', 1), 1, "")]
    for k, slide in enumerate(slides, start=2):
        try:
            found = [p for part in slide.parts for p in pieces(nb, part)]
        except ValueError as err:
            raise ValueError(f"lesson {number}, slide {k}: {err}") from None
        first_cell = slide.parts[0].partition(":")[0]
        place, nearest = nb.section(first_cell)
        body = []
        if not (found[0].kind == "markdown" and first_heading(found[0].content)):
            default = {"numbers": "Numbers to remember", "exercise": f"Your turn: {place}",
                       "verdict": "The verdict"}.get(slide.kind, nearest)
            body.append(f"<h2>{MD.renderInline(slide.heading or default)}</h2>\n")
        images = [piece_html(p, f"picture from cell {first_cell}") for p in found if p.kind == "image"]
        for p in found:
            if p.kind == "image":
                if images:  # every picture of the slide side by side, where the first one was
                    body.append('<div class="images">' + "".join(images) + "</div>\n")
                    images = []
            else:
                body.append(piece_html(p, ""))
        out.append(section(slide.kind, "".join(body), k, place, any(p.kind == "text" for p in found)))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(f'{number} · {title}')}: slides</title>\n"
        f"<style>{SLIDE_CSS}</style>\n</head>\n<body>\n" + "".join(out)
        + f"<script>{SLIDE_JS}</script>\n</body>\n</html>\n"
    )


# ---------------------------------------------------------------- the handout


def block_pieces(block: Block, notebooks: Path) -> tuple[list[Piece], str]:
    """A handout block's quoted pieces, and the line naming where they come from."""
    nb = read(notebooks, block.notebook)
    found = [p if p.kind == "markdown" else Piece("code", re.sub(r"\n\s*\n\s*\n", "\n\n", p.content))
             for part in block.parts for p in pieces(nb, part) if p.kind in ("markdown", "code")]
    place = nb.section(block.parts[0].partition(":")[0])[0]
    lesson = re.match(r"(\d\d)_", block.notebook)
    if lesson:
        title = TITLE.search(source(nb.cells[0])).group(2).strip()
        origin = f"From lesson {lesson.group(1)}, {title}, {place} (notebooks/{block.notebook})"
    else:
        stem = Path(block.notebook)
        origin = f"From the {stem.stem} {stem.parent.name}, {place} (notebooks/{block.notebook})"
    return found, origin


def course_title() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[0].lstrip("# ").split(":")[0]


HANDOUT_CSS = """
@page { size: A4; margin: 10mm 12mm; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; font-size: 9pt; line-height: 1.2;
  color: #111; margin: 0 auto; max-width: 186mm; }
h1 { font-size: 13pt; margin: 0 0 1mm; }
.lead { margin: 0 0 2.5mm; color: #464646; font-size: 7.6pt; }
.columns { display: grid; grid-template-columns: 1fr 1fr; column-gap: 7mm; }
h2 { font-size: 9.5pt; margin: 0 0 1mm; color: #1a4d80; }
.block { margin-bottom: 3.5mm; }
p, ul, ol { margin: 1mm 0; }
ul, ol { padding-left: 4.8mm; }
li { margin: .7mm 0; }
pre { font-family: "DejaVu Sans Mono", Consolas, Menlo, monospace; font-size: 7.2pt; line-height: 1.1;
  margin: 1mm 0 1.5mm; white-space: pre-wrap; overflow-wrap: anywhere; }
code { font-family: "DejaVu Sans Mono", Consolas, Menlo, monospace; font-size: .92em; }
pre code { font-size: 1em; }
.source { font-size: 6.6pt; font-style: italic; color: #5a5a5a; }
"""

LEAD = ("Four recipes to keep at hand, each quoted from the notebook cells that teach them; the line under "
        "each block names that notebook, where the reasons are.")


def handout_html(notebooks: Path = NOTEBOOKS) -> str:
    """The handout as one self-contained HTML page, laid out as the PDF is; it prints on one A4 page."""
    columns: dict[int, list[str]] = {0: [], 1: [], 2: []}
    for block in HANDOUT:
        found, origin = block_pieces(block, notebooks)
        inner = "".join(piece_html(p, "") for p in found)
        columns[block.column].append(f'<div class="block"><h2>{html.escape(block.title)}</h2>\n{inner}'
                                     f'<p class="source">{html.escape(origin)}</p></div>\n')
    heading = f"{course_title()}: the handout"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(heading)}</title>\n<style>{HANDOUT_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(heading)}</h1>\n<p class=\"lead\">{html.escape(LEAD)}</p>\n"
        + "".join(columns[0]) + '<div class="columns">\n'
        + "".join(f"<div>\n{''.join(columns[k])}</div>\n" for k in (1, 2)) + "</div>\n</body>\n</html>\n"
    )


def fonts_dir() -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def inline_runs(markdown_inline: str) -> list[tuple[str, str]]:
    """A paragraph's text as (style, text) runs: style "" (plain), "B" (bold), "I" (italic) or "code"."""
    runs: list[tuple[str, str]] = []
    bold = italic = 0
    for token in MD.parseInline(markdown_inline)[0].children or []:
        kind = token.type
        if kind == "strong_open":
            bold += 1
        elif kind == "strong_close":
            bold -= 1
        elif kind == "em_open":
            italic += 1
        elif kind == "em_close":
            italic -= 1
        elif kind == "code_inline":
            runs.append(("code", token.content))
        elif kind in ("math_inline", "math_inline_double"):
            runs.append(("", math_plain(token.content)))
        elif kind in ("softbreak", "hardbreak"):
            runs.append(("", " "))
        elif kind in ("text", "html_inline"):
            runs.append(("B" if bold else "I" if italic else "", token.content))
    return runs


def handout_pdf(notebooks: Path = NOTEBOOKS) -> bytes:
    """The handout as a one-page A4 PDF: the wide blocks across the page, the others in two columns.
    The creation date is fixed and the file's /ID is a hash of its content, so the bytes repeat."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=timezone.utc))
    pdf.set_producer("tools/workshop.py (fpdf2)")
    pdf.set_margins(12, 10, 12)
    pdf.set_auto_page_break(True, margin=10)
    ttf = fonts_dir()
    for family, style, file in (("Sans", "", "DejaVuSans"), ("Sans", "B", "DejaVuSans-Bold"),
                                ("Sans", "I", "DejaVuSans-Oblique"), ("Mono", "", "DejaVuSansMono")):
        pdf.add_font(family, style, ttf / f"{file}.ttf")
    heading = f"{course_title()}: the handout"
    pdf.set_title(heading)
    pdf.add_page()
    pdf.set_font("Sans", "B", 13)
    pdf.cell(0, 7, heading, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Sans", "", 7.6)
    pdf.set_text_color(70)
    pdf.multi_cell(0, 3.6, LEAD, new_x="LMARGIN", new_y="NEXT")
    pdf.set_text_color(0)
    pdf.ln(2.5)
    with pdf.text_columns(ncols=1, line_height=1.2) as region:
        for block in HANDOUT:
            if block.column == 0:
                pdf_block(pdf, region, block, notebooks)
    with pdf.text_columns(ncols=2, gutter=7, line_height=1.2) as region:
        for column in (1, 2):
            if column == 2:
                region.new_column()
            for block in HANDOUT:
                if block.column == column:
                    pdf_block(pdf, region, block, notebooks)
    return bytes(pdf.output())


PDF_TEXT, PDF_CODE = 9.0, 7.2  # points


def pdf_block(pdf, region, block: Block, notebooks: Path) -> None:
    found, origin = block_pieces(block, notebooks)
    pdf.set_font("Sans", "B", 9.5)
    pdf.set_text_color(26, 77, 128)
    with region.paragraph(bottom_margin=1) as par:
        par.write(block.title)
    pdf.set_text_color(0)
    for piece in found:
        if piece.kind == "code":
            pdf_code(pdf, region, piece.content)
            continue
        for kind, text in blocks(piece.content):
            if kind == "fence":
                pdf_code(pdf, region, "\n".join(text.splitlines()[1:-1]))
            elif kind.endswith("list_open"):
                ordered = kind == "ordered_list_open"
                for n, item in enumerate(list_items(text), start=1):
                    words = " ".join(re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", item).split())
                    pdf.set_font("Sans", "", PDF_TEXT)
                    with region.paragraph(indent=3.6, bullet_string=f"{n}." if ordered else "•",
                                          bullet_r_margin=1.2, bottom_margin=0.7) as par:
                        pdf_runs(pdf, par, inline_runs(words))
            else:
                pdf.set_font("Sans", "B" if kind == "heading_open" else "", PDF_TEXT)
                with region.paragraph(bottom_margin=1) as par:
                    pdf_runs(pdf, par, inline_runs(" ".join(text.lstrip("# ").split())))
    pdf.set_font("Sans", "I", 6.6)
    pdf.set_text_color(90)
    with region.paragraph(top_margin=0.4, bottom_margin=3.5) as par:
        par.write(origin)
    pdf.set_text_color(0)


def pdf_runs(pdf, par, runs: list[tuple[str, str]]) -> None:
    for style, text in runs:
        if style == "code":
            pdf.set_font("Mono", "", PDF_TEXT * 0.92)
        else:
            pdf.set_font("Sans", style, PDF_TEXT)
        par.write(text)


def pdf_code(pdf, region, code: str) -> None:
    pdf.set_font("Mono", "", PDF_CODE)
    with region.paragraph(top_margin=0.5, bottom_margin=1.5, line_height=1.1, skip_leading_spaces=False,
                          wrapmode="CHAR") as par:
        for line in code.rstrip().splitlines():
            par.write(line.replace(" ", "\u00a0"))  # keep the indentation
            par.ln()


# ---------------------------------------------------------------- the files


def build(notebooks: Path = NOTEBOOKS) -> dict[Path, bytes]:
    """Every generated file, with its bytes."""
    files = {OUT / "slides" / f"{number}.html": deck(number, notebooks).encode("utf-8") for number in DECKS}
    files[OUT / "handout.html"] = handout_html(notebooks).encode("utf-8")
    files[OUT / "handout.pdf"] = handout_pdf(notebooks)
    return files


def pending() -> dict[Path, bytes]:
    """Every generated file whose bytes would change, with the new bytes."""
    return {path: data for path, data in build().items() if not path.exists() or path.read_bytes() != data}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ("write", "check"):
        print(__doc__)
        return 2
    changes = pending()
    for path, data in changes.items():
        rel = path.relative_to(ROOT)
        if argv[1] == "write":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            print(f"updated {rel}")
        else:
            print(f"out of date: {rel} (run: python -m tools.workshop write)")
    return 1 if changes and argv[1] == "check" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The workshop's slides and handout (tools/workshop.py): up to date with the notebooks, offline, complete."""

from __future__ import annotations

import html
import json
import re
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tools import workshop

OUT = workshop.OUT
DECKS = sorted(workshop.DECKS)


@pytest.fixture(scope="module")
def built() -> dict[Path, bytes]:
    return workshop.build()


def test_the_committed_files_are_up_to_date(built):
    stale = [str(path.relative_to(workshop.ROOT)) for path, data in built.items()
             if not path.exists() or path.read_bytes() != data]
    assert not stale, f"out of date: {stale}; run: python -m tools.workshop write"
    assert workshop.pending() == {}


def test_every_lesson_has_a_deck_and_the_handout_both_forms(built):
    lessons = {p.name[:2] for p in workshop.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    assert set(DECKS) == lessons
    assert {p.relative_to(OUT).as_posix() for p in built} == (
        {f"slides/{n}.html" for n in DECKS} | {"handout.html", "handout.pdf"})


class Page(HTMLParser):
    """Every address a page would fetch, and its slides as (class, tags and attributes inside)."""

    def __init__(self):
        super().__init__()
        self.addresses: list[str] = []
        self.sections: list[tuple[str, list[tuple[str, dict]]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href", "data", "poster", "srcset", "action", "formaction"):
            if attrs.get(name) is not None:
                self.addresses.append(attrs[name])
        if attrs.get("style"):
            self.styles.append(attrs["style"])
        self._in_style = tag == "style"
        if tag == "section":
            self.sections.append((attrs.get("class", ""), []))
        elif self.sections:
            self.sections[-1][1].append((tag, attrs))

    def handle_data(self, data):
        if self._in_style:
            self.styles.append(data)

    def handle_endtag(self, tag):
        self._in_style = False


def parse(data: bytes) -> Page:
    page = Page()
    page.feed(data.decode("utf-8"))
    return page


def test_no_page_fetches_anything(built):
    for path, data in built.items():
        if path.suffix != ".html":
            continue
        page = parse(data)
        outside = [a for a in page.addresses if not a.startswith(("data:", "#"))]
        assert not outside, f"{path.name}: {outside}"
        for css in page.styles:
            urls = re.findall(r"url\(\s*['\"]?([^'\")]*)", css)
            urls += re.findall(r"@import\s+['\"]?([^'\"; ]+)", css)
            assert all(u.startswith(("data:", "#")) for u in urls), f"{path.name}: {urls}"
        assert b"<script src" not in data and b"<link" not in data, path.name


@pytest.mark.parametrize("number", DECKS)
def test_each_deck_has_a_title_a_demonstration_a_picture_and_an_exercise(built, number):
    page = parse(built[OUT / "slides" / f"{number}.html"])
    kinds = [kind for kind, _ in page.sections]
    assert kinds[0] == "title" and kinds.count("title") == 1
    title = dict(page.sections[0][1])
    assert "h1" in title
    with_output = [k for k, tags in page.sections if ("pre", {"class": "text"}) in tags]
    pictures = [k for k, tags in page.sections
                if any(t == "img" and a.get("src", "").startswith("data:image/png;base64,") for t, a in tags)]
    assert with_output and pictures and "exercise" in kinds, kinds
    if number == "13":  # a vote before each claim's cell runs, then its verdict
        assert kinds.count("vote") == kinds.count("verdict") >= 4, kinds
        assert all(kinds[kinds.index("vote", i) + 1] in ("verdict", "exercise")
                   for i in range(len(kinds)) if kinds[i] == "vote")
    else:
        assert "demo" in kinds and "numbers" in kinds, kinds
        assert 5 <= len(kinds) <= 10, kinds  # the title and up to 9 slides
    assert all(("footer", {}) in tags for _, tags in page.sections)


def test_an_exercise_slide_shows_the_prompt_never_the_answer_cell(built):
    decks = b"".join(data for path, data in built.items() if path.parent.name == "slides")
    assert b"check(&quot;" not in decks and b'check("' not in decks
    assert b"Not answered yet" not in decks


def pdf_text(data: bytes) -> str:
    """The text of a one-page fpdf2 PDF: its glyph codes mapped back through each font's ToUnicode CMap."""
    objects = {int(n): body for n, body in re.findall(rb"(\d+) 0 obj\s*(.*?)\s*endobj", data, re.S)}

    def stream(number: int) -> bytes:
        head, raw = re.match(rb"<<(.*?)>>\s*stream\r?\n(.*?)\r?\nendstream", objects[number], re.S).groups()
        return zlib.decompress(raw) if b"/FlateDecode" in head else raw

    def ref(body: bytes, key: bytes) -> int:
        return int(re.search(rb"/" + key + rb" (\d+) 0 R", body).group(1))

    page = next(body for body in objects.values() if re.search(rb"/Type /Page\b", body))
    fonts = dict(re.findall(rb"/(F\d+) (\d+) 0 R", objects[ref(page, b"Resources")]))
    maps = {}
    for name, number in fonts.items():
        cmap = stream(ref(objects[int(number)], b"ToUnicode")).decode("latin-1")
        utf16 = lambda h: bytes.fromhex(h).decode("utf-16-be")  # noqa: E731
        codes = {}
        for section in re.findall(r"beginbfchar(.*?)endbfchar", cmap, re.S):
            codes.update({int(a, 16): utf16(b) for a, b in re.findall(r"<(\w+)>\s*<(\w+)>", section)})
        for section in re.findall(r"beginbfrange(.*?)endbfrange", cmap, re.S):
            for a, b, c in re.findall(r"<(\w+)>\s*<(\w+)>\s*<(\w+)>", section):
                codes.update({k: chr(int(c, 16) + k - int(a, 16)) for k in range(int(a, 16), int(b, 16) + 1)})
        maps[name] = codes
    escapes = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}
    text, font = [], None
    content = stream(ref(page, b"Contents"))
    for token in re.finditer(rb"/(F\d+) [\d.]+ Tf|\(((?:\\.|[^\\)])*)\)", content, re.S):
        if token.group(1):
            font = maps[token.group(1)]
            continue
        raw = re.sub(rb"\\([0-7]{1,3}|.)", lambda m: bytes([int(m.group(1), 8)]) if m.group(1).isdigit()
                     else escapes.get(m.group(1), m.group(1)), token.group(2), flags=re.S)
        codes = (int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2))
        text.append("".join(font.get(code, "?") for code in codes))
    return " ".join(text)


def checklist_items() -> list[str]:
    """Lesson 12's debugging checklist, item by item, as plain text."""
    cells = json.loads(next(workshop.NOTEBOOKS.glob("12_*.ipynb")).read_text(encoding="utf-8"))["cells"]
    source = "".join(next(c for c in cells if c.get("id") == "l12-checklist")["source"])
    items = re.findall(r"^\d+\. (.+(?:\n(?!\d+\. ).+)*)", source, re.M)
    assert len(items) >= 5, source
    return [re.sub(r"[*`]", "", item) for item in items]


def test_the_handout_pdf_is_one_page_and_quotes_the_debugging_checklist(built):
    data = built[OUT / "handout.pdf"]
    assert data.startswith(b"%PDF-")
    assert len(re.findall(rb"/Type /Page\b", data)) == 1
    squeezed = lambda s: re.sub(r"\s+", "", s)  # noqa: E731 - line breaks fall anywhere in a column
    text = squeezed(pdf_text(data))
    for item in checklist_items():
        assert squeezed(item) in text, item
    assert squeezed("make_reproducible(seed)") in text and "From lesson 12" in pdf_text(data)
    page = html.unescape(re.sub(r"<[^>]+>", "", built[OUT / "handout.html"].decode("utf-8")))
    for item in checklist_items():
        assert squeezed(item) in squeezed(page), item


def test_the_pdf_bytes_repeat():
    assert workshop.handout_pdf() == workshop.handout_pdf()


def test_a_missing_cell_id_names_the_lesson_and_the_id():
    with pytest.raises(ValueError, match=r"lesson 01\b.*'no-such-cell'"):
        workshop.deck("01", slides=[workshop.Slide("demo", ("no-such-cell",))])
    with pytest.raises(ValueError, match=r"lesson 13\b.*'c05:vote'.*markdown"):
        workshop.deck("13", slides=[workshop.Slide("vote", ("c05:vote",))])


def test_an_edited_output_changes_the_deck(tmp_path):
    source = next(workshop.NOTEBOOKS.glob("01_*.ipynb"))
    nb = json.loads(source.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c.get("id") == "c20")  # the opening demonstration
    assert cell["outputs"][0]["text"], "lesson 01's opening cell has no stored output"
    cell["outputs"][0]["text"] = ["(a + b) + c = 1.0    a + (b + c) = 12345.0\n"]
    (tmp_path / source.name).write_text(json.dumps(nb), encoding="utf-8")
    edited = workshop.deck("01", notebooks=tmp_path)
    committed = (OUT / "slides" / "01.html").read_text(encoding="utf-8")
    assert "12345.0" in edited and "12345.0" not in committed
    assert edited != committed and edited.replace("12345.0", "0.0") == committed

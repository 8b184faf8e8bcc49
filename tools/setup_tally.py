"""Tally the set-up lines a workshop's participants pasted: who is ready, who is not and why, what they run.

    python -m tools.setup_tally chat.txt form.csv    # any text: a chat log, a form's export, an e-mail
    python -m tools.setup_tally -                     # the same from standard input

Each participant prints the line with ``python -m helpers.setup`` or in lesson 00
(``helpers.setup_line()``): ``fp-course-setup v1 | os=... | ... | problems=N: ...``. This tool finds
every line that holds the marker, wherever it sits in the text; what comes before it on its line (a
chat's ``[10:02] Ana:``, without times and dates) names who pasted it, and of two lines with the same
name only the later one counts. A line with the marker that cannot be read is listed, not dropped.
Plain Python: it imports neither torch nor the course's helpers.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

NAME = "fp-course-setup"  # helpers.setup.MARKER is NAME and the format's version
FORMATS = {"v1": ("os", "arch", "python", "torch", "build", "cpu", "threads", "widgets", "gpu", "problems")}
MARKED = re.compile(re.escape(NAME) + r"(?: (v\d+))?")
# a time or a date in a chat's prefix: 10:02, 10:02:15, 10:02 AM, 2026-12-01, 01/12/2026
STAMP = re.compile(r"\b\d{1,4}[-/.:]\d{1,2}(?:[-/.:]\d{1,4})*(?:\s*[AaPp]\.?[Mm]\b\.?)?")
ZOOM = re.compile(r"\bFrom\s+(.+?)\s+to\s+\S.*$")  # Zoom's chat: "10:02:15 From Ana to Everyone:"
PROBLEMS = re.compile(r"(\d+)(?:: (.+))?$")


@dataclass
class Line:
    """One line with the marker: where it was, who pasted it, and its fields or why they could not be read."""

    where: str
    who: str | None
    text: str
    fields: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unreadable: str | None = None

    @property
    def name(self) -> str:
        return self.who or self.where


def _who(prefix: str) -> str | None:
    """``[10:02] Ana Lopez: `` -> ``Ana Lopez``; None when nothing but times and punctuation is left."""
    text = STAMP.sub(" ", prefix)
    zoom = ZOOM.search(text)
    if zoom:
        text = zoom[1]
    text = " ".join(text.split()).strip(" \"'`,;:<>[](){}*-")
    return text or None


def read_line(text: str, where: str) -> Line | None:
    """The marked line in ``text`` (one line of a file), or None when it has no marker."""
    found = MARKED.search(text)
    if found is None:
        return None
    rest = text[found.end():].split('"')[0].rstrip().rstrip("'`")  # no '"' in the line: a CSV's quote ends it
    line = Line(where, _who(text[: found.start()]), found[0] + rest)
    keys = FORMATS.get(found[1] or "")
    if keys is None:
        line.unreadable = f"a format this tool does not know ({found[1] or 'no version'}; it reads v1)"
        return line
    parts = rest.split(" | ")
    if parts[0] != "":
        line.unreadable = "no ' | ' after the marker"
        return line
    pairs = [part.partition("=") for part in parts[1:]]
    line.fields = {key.strip(): value.strip() for key, sep, value in pairs if sep}
    missing = [key for key in keys if key not in line.fields]
    if missing or len(pairs) != len(keys):
        line.unreadable = ("fields missing: " + ", ".join(missing)) if missing else "fields not as in v1"
        return line
    count = PROBLEMS.match(line.fields["problems"])
    line.problems = count[2].split("; ") if count and count[2] else []
    if count is None or int(count[1]) != len(line.problems):
        line.unreadable = f"problems={line.fields['problems']!r} does not list as many problems as it counts"
    return line


def find_lines(texts: list[tuple[str, str]]) -> list[Line]:
    """Every marked line in (name, text) pairs, in order."""
    found = []
    for name, text in texts:
        for number, row in enumerate(text.splitlines(), 1):
            line = read_line(row, f"{name}:{number}")
            if line is not None:
                found.append(line)
    return found


@dataclass
class Tally:
    machines: list[Line]  # one per participant: the last readable line of each who (every line without one)
    repeated: int  # readable lines that a later line of the same who replaced
    unreadable: list[Line]
    ready: list[Line]
    by_problem: dict[str, list[tuple[str, str]]]  # "torch too old" -> [(who, "2.10.1+cpu < 2.11")]
    widgets_not_shown: list[str]
    widgets_not_checked: list[str]
    counts: dict[str, Counter]


def _os_family(value: str) -> str:
    for where in ("Colab", "Kaggle", "WSL"):
        if value.endswith(f"({where})"):
            return f"Linux ({where})"
    return value.split(" ")[0]


def tally(lines: list[Line]) -> Tally:
    readable = [line for line in lines if line.unreadable is None]
    latest: dict[str, Line] = {}
    for line in readable:  # a later line of the same who replaces the earlier one
        latest.pop(line.name, None)
        latest[line.name] = line
    machines = list(latest.values())
    by_problem: dict[str, list[tuple[str, str]]] = {}
    for machine in machines:
        for problem in machine.problems:
            kind, _, detail = problem.partition(" (")
            by_problem.setdefault(kind, []).append((machine.name, detail.removesuffix(")")))
    widgets = {machine.name: machine.fields["widgets"] for machine in machines}
    columns = {
        "OS": lambda f: _os_family(f["os"]),
        "Python": lambda f: ".".join(f["python"].split(".")[:2]),
        "torch": lambda f: f["torch"],
        "torch build": lambda f: f["build"],
        "CPU capability": lambda f: f["cpu"],
        "GPU": lambda f: f["gpu"],
    }
    return Tally(
        machines=machines,
        repeated=len(readable) - len(machines),
        unreadable=[line for line in lines if line.unreadable is not None],
        ready=[machine for machine in machines if not machine.problems],
        by_problem=dict(sorted(by_problem.items(), key=lambda item: -len(item[1]))),
        widgets_not_shown=[who for who, seen in widgets.items() if seen == "not shown"],
        widgets_not_checked=[who for who, seen in widgets.items() if seen.startswith("not checked")],
        counts={label: Counter(pick(m.fields) for m in machines) for label, pick in columns.items()},
    )


def report(result: Tally) -> str:
    """The tally as text for an instructor."""
    n = len(result.machines)
    out = [f"{n} machine{'s' * (n != 1)}: {len(result.ready)} ready (0 problems), {n - len(result.ready)} not"
           + (f"; {result.repeated} earlier line{'s' * (result.repeated != 1)} of the same person not counted"
              if result.repeated else "")]
    for kind, who in result.by_problem.items():
        out.append(f"  {kind} ({len(who)}): " + ", ".join(f"{name} ({detail})" if detail else name
                                                           for name, detail in who))
    out.append(f"widgets not shown: {len(result.widgets_not_shown)}"
               + (f" ({', '.join(result.widgets_not_shown)})" if result.widgets_not_shown else "")
               + f"; widgets not checked (lesson 00 not run to its end): {len(result.widgets_not_checked)}"
               + (f" ({', '.join(result.widgets_not_checked)})" if result.widgets_not_checked else ""))
    for label, counter in result.counts.items():
        ranked = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
        out.append(f"{label}: " + ", ".join(f"{value} ({count})" for value, count in ranked))
    if result.unreadable:
        out.append(f"lines with the marker that could not be read ({len(result.unreadable)}):")
        out += [f"  {line.where} ({line.who or 'no name'}): {line.unreadable}: {line.text[:80]}"
                for line in result.unreadable]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.setup_tally", description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="text files with pasted set-up lines; - for standard input")
    args = parser.parse_args(argv)
    texts = []
    for name in args.files:
        if name == "-":
            texts.append(("stdin", sys.stdin.read()))
        else:
            try:
                texts.append((name, Path(name).read_text(encoding="utf-8", errors="replace")))
            except OSError as err:
                parser.error(f"cannot read {name}: {err.strerror}")
    lines = find_lines(texts)
    if not lines:
        print(f"no line with {NAME!r} in {', '.join(args.files)}")
        return 1
    print(report(tally(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

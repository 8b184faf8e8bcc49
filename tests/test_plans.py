"""The workshop plans add up, at the learner's pace, and each lesson's section minutes are its total."""

import re

import pytest

from tools import course, plans


@pytest.mark.parametrize("path", course.lesson_paths(), ids=lambda p: p.name[:2])
def test_sections_add_up_to_the_lesson(path):
    sections = course.section_times(path)
    time = course.learning_time(path)
    assert course.round_up(sum(s.core for s in sections)) == time.core
    assert course.round_up(sum(s.full for s in sections)) == time.full
    assert all(0 <= s.core <= s.full for s in sections)
    numbered = [s.number for s in sections if s.number]
    assert numbered == sorted(numbered, key=lambda n: tuple(map(int, n.split(".")))), "sections out of order"


@pytest.mark.parametrize("plan", plans.PLANS, ids=lambda p: p.key)
def test_plan_adds_up(plan):
    table = plans.plan_table(plan)
    rows = [line.split(" | ") for line in table.splitlines() if re.match(r"\| \d\d:\d\d ", line)]
    minutes = [int(row[-1].rstrip(" |")) for row in rows]
    assert len(rows) == len(plan.blocks)
    # each start time is the previous one plus its minutes
    clock = [int(row[0][2:4]) * 60 + int(row[0][5:7]) for row in rows]
    assert [b - a for a, b in zip(clock, clock[1:], strict=False)] == minutes[:-1]
    total = int(re.search(r"Total: (\d+) of the (\d+)", table)[1])
    assert total == sum(minutes) <= plan.length
    # a lesson block's arithmetic: its terms sum to the stated pace, and the block covers pace and talk
    for row, block in zip(rows, plan.blocks, strict=True):
        if isinstance(block, plans.Part):
            terms = [float(t) for t in re.findall(r"(\d+\.\d) \(", row[2])]
            pace = float(re.search(r"= (\d+\.\d) at the learner's pace", row[2])[1])
            assert sum(terms) == pytest.approx(pace, abs=1e-6)
            assert pace + plans.TALK + plans.DISCUSS <= int(row[-1].rstrip(" |")) < pace + 15 + 5


def test_a_plan_that_overruns_or_names_a_missing_section_is_refused():
    long = plans.Plan("long", "09:00", 30, (plans.Part("01", ("1.1", "1.2", "1.3")),))
    with pytest.raises(ValueError, match="more than its 30"):
        plans.plan_table(long)
    with pytest.raises(ValueError, match="lesson 01 has no section 1.99"):
        plans.chosen(plans.Part("01", ("1.99",)))


def test_every_plan_keeps_exercises_in_the_room():
    for plan in plans.PLANS:
        kinds = []
        for block in plan.blocks:
            if isinstance(block, plans.Part):
                taken = {s.heading for s in plans.chosen(block)}
                section = None
                for cell in course.read(plans.lesson_path(block.lesson)).cells:
                    if cell.cell_type == "markdown":
                        for heading in re.findall(r"^## (.*)$", cell.source, re.M):
                            section = heading.strip()
                        if section in taken:
                            kinds += course.EXERCISE.findall(cell.source)
        assert len(kinds) >= 3, (plan.key, kinds)


def test_homework_names_what_the_plan_leaves_out():
    text = plans.homework(plans.PLANS[1])
    assert "03 (" in text and "the rest of 01" in text
    assert "1.1," not in text.split("the rest of 01 (")[1].split(")")[0]


def test_notes_block_lists_every_section_with_time():
    block = plans.notes_block("04")
    for section in course.section_times(plans.lesson_path("04")):
        if section.heading and section.full >= 0.05:
            assert f"| {section.heading} | {section.core:.1f} |" in block
    assert "| 4.1 One sum, up to twenty results | " in block and "yes" in block

"""The profiler table parser and its HTML."""

from __future__ import annotations

import pytest

from scripts.tracefacts.pictures.profiler_table import TableError, parse_table, render_table, to_us
from tests.conftest import ROOT

TABLE = (ROOT / "traces/01_matmul_add/64_bf16_cold_eager.txt").read_text()


def test_parses_columns_rows_and_totals():
    table = parse_table(TABLE)
    assert table.columns[0] == "Name" and table.columns[-1] == "# of Calls"
    assert "CUDA time avg" in table.columns  # a header wider than its column
    mm = table.row("aten::mm")
    assert mm is not None and mm["# of Calls"] == "3"
    assert table.total("Self CPU time total").endswith(("us", "ms", "s"))
    assert table.sort_column == "CUDA total"


def test_sort_column_is_found_from_the_data():
    table = parse_table(TABLE)
    cuda = [to_us(c) for c in table.column("CUDA total")]
    assert cuda == sorted(cuda, reverse=True)


def test_html_escapes_names_and_marks_the_sort_column():
    html = render_table(parse_table(TABLE), caption="a <caption>")
    assert "&lt;8, at..." in html and "<8, at" not in html
    assert 'aria-sort="descending"' in html and "CUDA total ▼" in html
    assert "a &lt;caption&gt;" in html
    short, full = views(html)
    for view in (short, full):  # every row once in each view: head, body, the two totals
        assert view.count("<tr>") == len(parse_table(TABLE).rows) + 1 + 2


def views(html: str) -> tuple[str, str]:
    """The short view the page holds, and the full view kept in the <template> for the switch."""
    import re

    short, rest = html.split("<template", 1)
    full = re.search(r'<table class="prof prof-full-view">.*?</table>', rest, re.S).group(0)
    return short, full


@pytest.mark.parametrize("text", ["", "hello", "-----\nName\n-----\n"])
def test_rejects_text_that_is_not_a_table(text):
    with pytest.raises(TableError):
        parse_table(text)


def test_time_units():
    assert to_us("2.314ms") == pytest.approx(2314)
    assert to_us("23.104us") == pytest.approx(23.104)
    assert to_us("1.151s") == pytest.approx(1.151e6)


def cells_of(html: str, row_pattern: str) -> list[str]:
    import re

    row = re.search(row_pattern, html, re.S).group(0)
    return re.findall(r"<t[hd]\b([^>]*)>(.*?)</t[hd]>", row, re.S)


def test_first_needed_columns_show_the_rest_are_one_switch_away():
    import re

    from scripts.tracefacts.pictures.profiler_table import first_columns

    table = parse_table(TABLE)
    assert first_columns(table) == ("Name", "Self CPU", "Self CUDA", "CUDA total", "# of Calls")
    html = render_table(table)
    short, full = views(html)
    heading = lambda view: [re.sub(r"<[^>]+>", "", text).rstrip(" ▼") for _, text in cells_of(view, r"<thead>.*?</thead>")]
    assert heading(short) == list(first_columns(table))  # the page's document holds these only
    assert heading(full) == list(table.columns)
    assert 'class="prof-all"' in html and f"All {len(table.columns)} columns" in html


def test_the_sort_column_always_shows():
    from scripts.tracefacts.pictures.profiler_table import ProfilerTable, first_columns

    table = ProfilerTable(columns=("Name", "Self CPU", "CPU total", "Self CUDA", "# of Calls"),
                          rows=(("a", "1us", "9us", "0us", "1"), ("b", "2us", "3us", "1us", "1")), totals=())
    assert table.sort_column == "CPU total"
    assert "CPU total" in first_columns(table)
    cpu_only = ProfilerTable(columns=("Name", "Self CPU %", "Self CPU", "CPU total", "CPU time avg", "# of Calls"),
                             rows=(("a", "1%", "1us", "9us", "9us", "1"),), totals=())
    assert first_columns(cpu_only) == ("Name", "Self CPU", "CPU total", "# of Calls")


def test_each_total_stands_under_the_column_it_adds_up():
    import re

    from scripts.tracefacts.pictures.profiler_table import first_columns

    table = parse_table(TABLE)
    html = render_table(table)
    for view, columns in zip(views(html), (first_columns(table), table.columns)):
        for label, column in (("Self CPU time total", "Self CPU"), ("Self CUDA time total", "Self CUDA")):
            cells = cells_of(view, rf"<tr><th[^>]*>{label}</th>.*?</tr>")
            assert len(cells) == len(columns)
            filled = [i for i, (_, text) in enumerate(cells) if text and i]
            assert filled == [columns.index(column)]
            assert cells[filled[0]][1] == table.total(label)
    assert "prof-totals" not in html  # no second copy of them below the table


def test_long_names_are_shortened_with_the_profilers_name_kept():
    from scripts.tracefacts.facts.analysis import short_name
    from scripts.tracefacts.pictures.markup import escape

    table = parse_table(TABLE)
    html = render_table(table)
    long = next(row[0] for row in table.rows if short_name(row[0]) != row[0])
    short, full = views(html)
    assert "&lt;8, at..." in short  # the profiler's own name on hover
    assert f'<code class="prof-short">{short_name(long)}</code>' in short
    assert short.count('class="prof-short"') == sum(short_name(r[0]) != r[0] for r in table.rows)
    assert "prof-short" not in full and all(f"<code>{escape(r[0])}</code>" in full for r in table.rows)



SHAPES = ROOT / "traces/07_shapes_stacks/shapes_b16_s64-256-1024-4096_1024x4096_bf16.txt"


def visible_rows(view: str) -> list[tuple[str, ...]]:
    """The body rows of a rendered view as a reader sees them: each cell's text."""
    import html
    import re

    body = re.search(r"<tbody>(.*?)</tbody>", view, re.S).group(1)
    return [tuple(html.unescape(re.sub(r"<[^>]+>", "", text)) for _, text in cells_of(row, r".*"))
            for row in re.findall(r"<tr>.*?</tr>", body, re.S)]


def row_shapes(view: str) -> list[str]:
    """The grouping cell under each row's name in the short view."""
    import html
    import re

    body = re.search(r"<tbody>(.*?)</tbody>", view, re.S).group(1)
    return [html.unescape(cell) for cell in re.findall(r'<th scope="row"[^>]*>.*?<span class="prof-group">(.*?)</span></th>', body)]


def test_a_table_grouped_by_input_shape_shows_the_shapes_under_the_names():
    """Part 5's `key_averages(group_by_input_shape=True)`: one op's rows differ by their shapes, so
    the short view shows each row's shapes under its name (a column of its own would push the
    first-needed columns out of a phone's view), the full view as the profiler's column; no two
    rows read the same in either."""
    from dataclasses import replace

    grouped = parse_table(SHAPES.read_text().split("\nGrouped by input shape", 1)[1].split("\n", 1)[1])
    shapes = grouped.columns.index("Input Shapes")
    short, full = views(render_table(grouped))
    assert row_shapes(short) == [r[shapes] for r in grouped.rows]
    assert "<span class=\"prof-group\">Input Shapes</span>" in short.split("</thead>")[0]
    assert [r[shapes] for r in visible_rows(full)] == [r[shapes] for r in grouped.rows]
    for view in (short, full):
        rows = visible_rows(view)
        assert len(rows) == len(grouped.rows) and len(set(rows)) == len(rows)
    # the page shows the rows of aten::linear only (part5.shown_table): one per length, told apart
    linear = replace(grouped, rows=tuple(r for r in grouped.rows if r[0] == "aten::linear"))
    short = views(render_table(linear))[0]
    assert len(set(row_shapes(short))) == 4 and len({r[0] for r in visible_rows(short)}) == 4


def test_a_grouping_cell_is_escaped_and_bounded():
    """Shapes come from someone's trace: a cell shows as text, never markup, and no longer than the
    profiler's own cap; a cell within it shows whole."""
    from scripts.tracefacts.pictures.profiler_table import GROUP_CELL_WIDTH, ProfilerTable, first_columns

    hostile = "[<script>alert(1)</script>]" + "[1, 2]" * 100
    table = ProfilerTable(columns=("Name", "Self CPU", "CPU total", "CPU time avg", "# of Calls", "Input Shapes"),
                          rows=(("op", "2us", "9us", "9us", "1", hostile), ("op", "1us", "3us", "3us", "1", "[[4, 4]]")),
                          totals=())
    assert first_columns(table) == ("Name", "Self CPU", "CPU total", "# of Calls")
    short, full = views(render_table(table))
    for view, cells in ((short, row_shapes(short)), (full, [row[5] for row in visible_rows(full)])):
        assert "<script>" not in view and "&lt;script&gt;" in view
        assert len(cells[0]) == GROUP_CELL_WIDTH and cells[0].endswith("...")
        assert hostile.startswith(cells[0][:-3]) and cells[1] == "[[4, 4]]"


def test_an_ungrouped_table_has_no_grouping_lines():
    from scripts.tracefacts.pictures.profiler_table import group_columns

    table = parse_table(TABLE)
    assert group_columns(table) == () and "prof-group" not in render_table(table)

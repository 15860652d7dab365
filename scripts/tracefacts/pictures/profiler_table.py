"""The profiler table: `key_averages().table()` text parsed into rows, and rendered as HTML.

The text is what a reader gets from their own run, so we parse that rather than a private format:
the dashed rule above the header gives each column's span, which survives names with spaces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .kernel_tips import KernelTips
from .markup import Markup, concat, h, table as html_table, td, th

# Columns a table can be sorted by, in the order we test them when finding the sort column.
SORT_CANDIDATES = ("CUDA total", "Self CUDA", "CPU total", "Self CPU", "Device total", "Self Device")
TIME_UNITS_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
TIME = re.compile(r"^(-?[\d.]+)(ns|us|ms|s)$")


class TableError(ValueError):
    """Text that is not a torch.profiler table."""


@dataclass(frozen=True)
class ProfilerTable:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    totals: tuple[tuple[str, str], ...]  # ("Self CPU time total", "325.345us"), ...

    def column(self, name: str) -> list[str]:
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def total(self, label: str) -> str | None:
        return dict(self.totals).get(label)

    def row(self, name: str) -> dict[str, str] | None:
        """The first row with this name, as column -> cell."""
        for row in self.rows:
            if row[0] == name:
                return dict(zip(self.columns, row))
        return None

    @property
    def sort_column(self) -> str | None:
        """The column the rows are sorted by: the first candidate whose values never increase."""
        for name in SORT_CANDIDATES:
            if name in self.columns:
                values = [to_us(cell) for cell in self.column(name)]
                if len(values) > 1 and all(a >= b for a, b in zip(values, values[1:])):
                    return name
        return None


def to_us(cell: str) -> float:
    """A time cell such as '2.314ms' in microseconds."""
    match = TIME.match(cell.strip())
    if not match:
        raise ValueError(f"not a time: {cell!r}")
    return float(match.group(1)) * TIME_UNITS_US[match.group(2)]


def _spans(rule: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]


def parse_table(text: str) -> ProfilerTable:
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line.strip() and set(line.strip()) <= {"-", " "}]
    if len(rules) < 3:
        raise TableError("not a torch.profiler table (expected three dashed rules)")
    spans = _spans(lines[rules[0]])

    def cells(line: str) -> tuple[str, ...]:
        return tuple(line[start:end].strip() for start, end in spans)

    # Header names may be wider than their column and shift the rest of the line, but they never
    # hold two spaces in a row.
    header = tuple(re.split(r"\s{2,}", lines[rules[0] + 1].strip()))
    if len(header) != len(spans):
        raise TableError(f"header has {len(header)} names for {len(spans)} columns")
    rows = tuple(cells(line) for line in lines[rules[1] + 1 : rules[2]] if line.strip())
    totals = tuple(
        tuple(part.strip() for part in line.split(":", 1))
        for line in lines[rules[2] + 1 :]
        if ":" in line and "total" in line
    )
    return ProfilerTable(columns=header, rows=rows, totals=totals)


def _is_numeric(cell: str) -> bool:
    return bool(re.match(r"^-?[\d.]+(%|ns|us|ms|s)?$", cell))


# The columns a reader needs first, shown by default; the rest are one click away. The sort column
# is always among those shown.
FIRST_COLUMNS = ("Self CPU", "Self CUDA", "CUDA total", "# of Calls")
FALLBACK_COLUMNS = ("Self CPU", "CPU total", "# of Calls")  # a table without CUDA columns


# The column a grouped table adds (`key_averages(group_by_input_shape=True)`): what tells the rows
# of one op apart, so the short view always shows it, under each row's name (a column of its own
# would push the first-needed columns out of a phone's view).
GROUP_COLUMNS = ("Input Shapes",)
# The widest cell of such a column we show: the profiler's own cap (`table(max_shapes_column_width=
# 80)`), so a table it printed is never cut further, and a cell from elsewhere stays bounded.
GROUP_CELL_WIDTH = 80


def first_columns(table: ProfilerTable) -> tuple[str, ...]:
    """The name column, the first-needed columns the table has, and its sort column, in the
    table's order."""
    wanted = [c for c in FIRST_COLUMNS if c in table.columns]
    if not any("CUDA" in c for c in wanted):
        wanted = [c for c in FALLBACK_COLUMNS if c in table.columns]
    keep = {table.columns[0], *wanted, *([table.sort_column] if table.sort_column else [])}
    return tuple(c for c in table.columns if c in keep)


def group_columns(table: ProfilerTable) -> tuple[str, ...]:
    """The columns a grouped table groups its rows by, which the short view shows under the names."""
    return tuple(c for c in GROUP_COLUMNS if c in table.columns[1:])


def group_cell(cell: str) -> str:
    """A grouping cell, at most GROUP_CELL_WIDTH characters (cut ones end in CUT)."""
    return cell if len(cell) <= GROUP_CELL_WIDTH else cell[:GROUP_CELL_WIDTH - len(CUT)] + CUT


def _total_column(label: str, columns: tuple[str, ...]) -> str | None:
    """The column a foot total adds up: 'Self CPU time total' is the Self CPU column's."""
    column = label.removesuffix(" time total")
    return column if column != label and column in columns else None


def render_table(table: ProfilerTable, caption: str = "", activities: Mapping[str, str] | None = None) -> Markup:
    """An accessible HTML table: names escaped and shortened (the profiler's name on hover and in
    the full view), numbers right-aligned, the sort column marked, each total of the foot under
    the column it adds up. The page holds the first-needed columns; the full table (every column,
    the profiler's names) waits in a <template> until the checkbox above the table swaps it in
    (docs/javascripts/tables.js), so that a long post's document holds only what shows. The search
    index takes the short view only: the full one would double every post's share of it.

    `activities` (name -> kind of each GPU activity of the trace the table was made with) makes
    each row that is one of them a button that says what its name says (kernel_tips.py): read
    from the trace's name, which the table may have cut short."""
    shown = first_columns(table)
    tips = KernelTips(caption or "profiler table") if activities else None
    compact = _table_view(table, shown, caption, full=False, tips=tips, activities=activities)
    if len(shown) + len(group_columns(table)) == len(table.columns):
        return scrolling_table(compact, "profiler table", after=tips and tips.notes())
    switch = h("label", {"class": "prof-switch"}, h("input", {"type": "checkbox", "class": "prof-all"}),
               f" All {len(table.columns)} columns and the profiler's full names")
    full = _table_view(table, table.columns, caption, full=True, tips=tips, activities=activities)
    return scrolling_table(compact, "profiler table", before=switch,
                           after=concat(h("template", {"class": "prof-other", "data-search-exclude": True}, full),
                                        tips and tips.notes()))


# The profiler cuts a name longer than its name column (55 characters by default) and ends it so.
CUT = "..."


def activities_named(row_name: str, activities: Mapping[str, str]) -> list[tuple[str, str]]:
    """The GPU activities (kind, name) a row of the table can be: the one of its name, or, for
    a name the profiler cut, each whose name begins with what it kept."""
    if row_name in activities:
        return [(activities[row_name], row_name)]
    if row_name.endswith(CUT) and len(row_name) > len(CUT):
        kept = row_name[:-len(CUT)]
        return [(kind, name) for name, kind in activities.items() if name.startswith(kept)]
    return []


def _table_view(table: ProfilerTable, columns: tuple[str, ...], caption: str, full: bool,
                tips: KernelTips | None = None, activities: Mapping[str, str] | None = None) -> Markup:
    """The table with these columns: the short view names rows by their short names (the
    profiler's own on hover), with a grouped table's grouping cells under them, the full view by
    the profiler's names; with `tips`, a GPU activity's name is a button that says what it is.
    Grouping cells are text from the trace: bounded here, escaped by the builder."""
    from ..facts.analysis import short_name

    sort = table.sort_column
    keep = [table.columns.index(c) for c in columns]
    under = [] if full else [table.columns.index(c) for c in group_columns(table)]
    head = []
    for name in columns:
        if name == sort:
            head.append(th(f"{name} ▼", {"scope": "col", "class": "num sorted", "aria-sort": "descending",
                                         "title": "rows sorted by this column"}))
        elif name == table.columns[0]:
            head.append(th(concat(name, *(h("span", {"class": "prof-group"}, table.columns[k]) for k in under)),
                           {"scope": "col"}))
        else:
            head.append(th(name, {"scope": "col", "class": "prof-group" if name in GROUP_COLUMNS else "num"}))
    body = []
    for row in table.rows:
        short = short_name(row[0])
        shown, code_attrs = (row[0], None) if full or short == row[0] else (short, {"class": "prof-short"})
        named = activities_named(row[0], activities) if tips is not None else []
        name = tips.cut(named, shown, code_attrs) if named else h("code", code_attrs, shown)
        name = concat(name, *(h("span", {"class": "prof-group"}, group_cell(row[k])) for k in under))
        cells = [th(name, {"scope": "row", "title": row[0] if short != row[0] and not full else None})]
        for k in keep[1:]:
            cell, column = row[k], table.columns[k]
            if column in GROUP_COLUMNS:
                cells.append(td(group_cell(cell), {"class": "prof-group"}))
                continue
            more = [*(["num"] if _is_numeric(cell) else []), *(["sorted"] if column == sort else [])]
            cells.append(td(cell, {"class": " ".join(more) or None}))
        body.append(cells)
    foot = []
    for label, value in table.totals:
        column = _total_column(label, columns)
        cells = [th(label if column else f"{label}: {value}", {"scope": "row"})]
        for name in columns[1:]:
            cells.append(td(value if name == column else "", {"class": "num" if name == column else None}))
        foot.append(cells)
    return html_table(head, body, caption=caption, foot=foot,
                      attrs={"class": "prof prof-full-view" if full else "prof"})


def scrolling_table(table_html: Markup, label: str, after: Markup | None = None,
                    searchable: bool = True, before: Markup | None = None) -> Markup:
    """A table in the box that scrolls sideways on narrow screens (keyboard-reachable, labelled),
    with `before` above and `after` below the scrolling part. Tables of numbers only can stay out
    of the search index, which every page downloads."""
    scroll = h("div", {"class": "prof-scroll", "tabindex": 0, "role": "region",
                       "aria-label": f"{label}, scrolls sideways"}, table_html)
    return h("div", {"class": "prof-table", "data-search-exclude": not searchable}, before, scroll, after)

"""The profiler table: `key_averages().table()` text parsed into rows, and rendered as HTML.

The text is what a reader gets from their own run, so we parse that rather than a private format:
the dashed rule above the header gives each column's span, which survives names with spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

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


def render_table(table: ProfilerTable, caption: str = "") -> str:
    """An accessible HTML table: names escaped, numbers right-aligned, the sort column marked."""
    sort = table.sort_column
    head = []
    for name in table.columns:
        if name == sort:
            head.append(f'<th scope="col" class="num sorted" aria-sort="descending" '
                        f'title="rows sorted by this column">{escape(name)} ▼</th>')
        else:
            align = ' class="num"' if name != table.columns[0] else ""
            head.append(f'<th scope="col"{align}>{escape(name)}</th>')
    body = []
    for row in table.rows:
        cells = [f'<th scope="row"><code>{escape(row[0])}</code></th>']
        for name, cell in zip(table.columns[1:], row[1:]):
            classes = ["num"] if _is_numeric(cell) else []
            if name == sort:
                classes.append("sorted")
            cls = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{cls}>{escape(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    foot = "".join(
        f'<tr><th scope="row" colspan="{len(table.columns) - 1}">{escape(label)}</th>'
        f'<td class="num">{escape(value)}</td></tr>'
        for label, value in table.totals
    )
    caption_html = f"<caption>{escape(caption)}</caption>" if caption else ""
    # The totals are what to read first, so they also stand below the table, outside the part
    # that scrolls sideways.
    totals = " · ".join(f"{escape(label)}: <strong>{escape(value)}</strong>" for label, value in table.totals)
    return scrolling_table(
        f'<table class="prof">{caption_html}<thead><tr>{"".join(head)}</tr></thead>'
        f'<tbody>{"".join(body)}</tbody><tfoot>{foot}</tfoot></table>',
        "profiler table", after=f'<p class="prof-totals">{totals}</p>')


def scrolling_table(table_html: str, label: str, after: str = "", searchable: bool = True) -> str:
    """A table in the box that scrolls sideways on narrow screens (keyboard-reachable, labelled),
    with `after` below the scrolling part. Tables of numbers only can stay out of the search
    index, which every page downloads."""
    exclude = "" if searchable else " data-search-exclude"
    return (
        f'<div class="prof-table"{exclude}><div class="prof-scroll" tabindex="0" role="region" '
        f'aria-label="{escape(label)}, scrolls sideways">{table_html}</div>{after}</div>'
    )

"""The profiler table parser and its HTML."""

from __future__ import annotations

import pytest

from scripts.table import TableError, parse_table, render_table, to_us
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
    assert html.count("<tr>") == len(parse_table(TABLE).rows) + 1 + 2


@pytest.mark.parametrize("text", ["", "hello", "-----\nName\n-----\n"])
def test_rejects_text_that_is_not_a_table(text):
    with pytest.raises(TableError):
        parse_table(text)


def test_time_units():
    assert to_us("2.314ms") == pytest.approx(2314)
    assert to_us("23.104us") == pytest.approx(23.104)
    assert to_us("1.151s") == pytest.approx(1.151e6)

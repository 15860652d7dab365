"""Kernel names that explain themselves (scripts/tracefacts/pictures/kernel_tips.py): what a
name's note says is the decoder's reading and nothing more ("not decoded" where no rule reads
it); a table writes each explanation once and every button names a note of its own table; a
profiler table's rows are read from the trace's full names, cut or not; hostile names stay text
in the buttons, their titles, the notes and the glossary's piece-by-piece reading."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from scripts.tracefacts.facts.analysis import facts
from scripts.tracefacts.facts.kernels import NOT_DECODED, decode
from scripts.tracefacts.model.trace import build_trace, load_trace
from scripts.tracefacts.pictures.facts_box import render_facts_box
from scripts.tracefacts.pictures.kernel_tips import (NOT_DECODED_TEXT, KernelTips, explanation,
                                                     reading_html)
from scripts.tracefacts.pictures.profiler_table import activities_named, parse_table, render_table
from tests.fixtures import gather_kernel_names
from tests.fixtures.handmade import ADD, GEMM, TRITON, TraceWriter
from tests.injected_trace import IMG, PAYLOAD, SCRIPT
from tests.test_escaping import Parsed, assert_inert

ROOT = Path(__file__).resolve().parents[1]
BUTTON = re.compile(r'<button type="button" class="ktip" aria-describedby="(kt-[0-9a-f]+)">'
                    r'<code[^>]*>(.*?)</code></button>')


def notes_of(html: str) -> dict[str, str]:
    """Each note's id -> its lines (joined by new lines), as the page holds them."""
    return {i: unescape(body.replace("<br>", "\n"))
            for i, body in re.findall(r'<span id="(kt-[0-9a-f]+)">(.*?)</span>', html)}


# --- what a note says ------------------------------------------------------------------------------


def test_a_note_says_each_field_the_name_spells_and_only_those():
    lines = explanation(decode(GEMM))
    assert lines == ("Library: cuBLAS", "Operation: GEMM (matrix math)", "Architecture: sm90 (Hopper)",
                     "Tile: 256x128", "Layout: NNT", "Also in the name: bz_coopA")
    xmma = explanation(decode("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_stage4_warpsize2x2x1_"
                              "tensor16x8x16_execute_kernel__5x_cublas"))
    assert "Data types: bf16, f32" in xmma and "Architecture: sm80 (Ampere)" in xmma
    assert "Tensor cores: no" in explanation(decode("volta_sgemm_128x64_nn"))
    assert "Tensor cores: yes" in explanation(decode("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"))
    # the ops a Triton kernel fused are in its name: the note says where, not the list again
    assert explanation(decode(TRITON))[-1] == "Fused: the ops its name lists after fused_"
    assert explanation(decode(ADD)) == ("Library: ATen", "Operation: elementwise (memory-bound kernels)",
                                        "Data types: f32", "Also in the name: CUDAFunctor_add")


@pytest.mark.parametrize("name", ["my_gemm", "causal_attention_kernel", "", IMG + SCRIPT])
def test_a_name_no_rule_reads_is_not_decoded_and_nothing_more(name):
    assert explanation(decode(name)) == (NOT_DECODED_TEXT,)


def test_a_known_library_with_an_operation_the_table_does_not_know_says_so():
    lines = explanation(decode("void at::native::(anonymous namespace)::brand_new_kernel<float>(float*)"))
    assert lines[:2] == ("Library: ATen", "Operation: not decoded (work class unknown)")


@pytest.mark.parametrize("row", gather_kernel_names.read_table(), ids=lambda row: row["name"][:60])
def test_every_real_name_gets_the_decoders_reading_or_not_decoded(row):
    decoded = decode(row["name"], row["kind"])
    lines = explanation(decoded)
    if decoded.library == "unknown":
        assert lines == (NOT_DECODED_TEXT,)
    else:  # each field the decoder found is said, none it did not
        assert lines[0] == f"Library: {decoded.library}"
        text = "\n".join(lines)
        for label, value in (("Architecture", decoded.arch), ("Tile", decoded.tile), ("Layout", decoded.layout)):
            assert (f"{label}: {value}" in text) == bool(value)
        assert ("Data types: " in text) == bool(decoded.dtypes)
        assert ("Tensor cores: " in text) == (decoded.tensor_cores is not None)


# --- one table's buttons and notes ---------------------------------------------------------------


def test_each_explanation_is_written_once_and_every_button_names_a_note_of_its_table():
    tips = KernelTips("a caption")
    buttons = [tips.name(GEMM), tips.name(ADD, "short add"), tips.name(GEMM, "the GEMM again"),
               tips.name("my_kernel"), tips.name("other_kernel")]
    notes = notes_of(tips.notes())
    assert len(notes) == 3  # the GEMM's, the add's, "not decoded"
    ids = [BUTTON.fullmatch(b).group(1) for b in buttons]
    assert set(ids) == set(notes) and ids[0] == ids[2] and ids[3] == ids[4]
    assert notes[ids[3]] == NOT_DECODED_TEXT
    assert 'hidden' in tips.notes() and "data-search-exclude" in tips.notes()
    # another table on the page: the same name, another id
    other = KernelTips("another caption")
    assert BUTTON.fullmatch(other.name(GEMM)).group(1) != ids[0]
    assert KernelTips("empty").notes() is None


def test_a_name_cut_short_says_what_all_its_candidates_say():
    add_bf16 = ADD.replace("float", "c10::BFloat16")
    tips = KernelTips("cut")
    button = tips.cut([("kernel", ADD), ("kernel", add_bf16)], "at::native::vectorized_elementwise_kernel")
    (lines,) = notes_of(tips.notes()).values()
    assert lines.split("\n") == ["Cut short: one of 2 GPU activities of the trace; what they all say:",
                                 "Library: ATen", "Operation: elementwise (memory-bound kernels)",
                                 "Also in the name: CUDAFunctor_add"]  # the data types differ: unsaid
    assert BUTTON.fullmatch(button)
    one = KernelTips("one")
    one.cut([("kernel", ADD)], "shown")
    assert list(notes_of(one.notes()).values()) == ["\n".join(explanation(decode(ADD)))]


def test_a_profiler_table_reads_its_gpu_rows_from_the_traces_full_names():
    base = ROOT / "traces/01_matmul_add/4096_bf16_warm_eager"
    table = parse_table(base.with_suffix(".txt").read_text())
    trace = load_trace(base.with_suffix(".json.gz"))
    activities = {e.name: e.kind for e in trace.gpu_activities}
    cut = next(row[0] for row in table.rows if row[0].endswith("..."))
    (full,) = activities_named(cut, activities)
    assert full[1].startswith(cut[:-3]) and decode(full[1]).dtypes == ("bf16",)  # the cut kept no type
    assert activities_named("aten::mm", activities) == [] and activities_named("...", activities) == []
    html = render_table(table, "caption", activities)
    named = {unescape(text): note for note, text in BUTTON.findall(html)}
    notes = notes_of(html)
    gpu_rows = [row[0] for row in table.rows if activities_named(row[0], activities)]
    assert len(gpu_rows) >= 3 and not any(row.startswith("aten::") for row in gpu_rows)
    assert set(named) >= set(gpu_rows)  # the full view names each row by the profiler's name
    for row in gpu_rows:
        (kind, name), = activities_named(row, activities)
        assert notes[named[row]] == "\n".join(explanation(decode(name, kind)))
    assert "aten::mm" not in named  # a CPU op: no button
    assert render_table(table, "caption").count("ktip") == 0  # without the trace: none


# --- hostile names -----------------------------------------------------------------------------------


HOSTILE = [f"triton_poi_fused_add_0{SCRIPT}", IMG, f"void at::native::vectorized_elementwise_kernel<4, "
           f"at::native::CUDAFunctor_add<float> >(int{PAYLOAD})", f"Memcpy DtoD{IMG}"]


def test_hostile_names_stay_text_in_buttons_titles_and_notes():
    tips = KernelTips(f"caption {IMG}")
    html = "".join(tips.name(name, name, code_attrs={"title": name}) for name in HOSTILE) + tips.notes()
    parsed = assert_inert(html)
    for name in HOSTILE:
        shown = name.replace("\ud800", "\ufffd")
        assert shown in parsed.text and shown in parsed.attribute_values()
    assert decode(HOSTILE[0]).library == "Triton (Inductor)" and decode(HOSTILE[1]) == NOT_DECODED
    assert NOT_DECODED_TEXT in parsed.text and "Library: Triton (Inductor)" in parsed.text


def test_a_hostile_top_kernel_is_text_in_the_facts_box_and_its_note():
    name = f"{GEMM}{IMG}{SCRIPT}"  # not read: nvjet's rule wants its layout at the end
    w = TraceWriter()
    w.launch(0, 2, [("kernel", name, 3, 30, 7)])
    w.launch(3, 2, [("kernel", ADD, 33, 10, 7)])
    box = render_facts_box(facts(build_trace(w.trace())), "guide/analyze-your-trace/")
    parsed = assert_inert(box)
    (note,) = BUTTON.findall(box)[:1]
    assert notes_of(box)[note[0]] == NOT_DECODED_TEXT
    assert any(IMG in value for value in parsed.attribute_values())  # the full name on hover
    assert "ktip-notes" in box


def test_a_hostile_name_read_piece_by_piece_stays_text():
    name = f"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT{IMG}"
    parsed = assert_inert(reading_html(name, where=f"from {SCRIPT}"))
    assert name in parsed.text and SCRIPT in parsed.text and NOT_DECODED_TEXT in parsed.text
    decoded = Parsed(reading_html(f"triton_poi_fused_add_0{SCRIPT}"))
    assert f"triton_poi_fused_add_0{SCRIPT}" in decoded.text
    assert "the family: Triton (Inductor), pointwise" in decoded.text
    assert not [tag for tag, _ in decoded.tags if tag == "script"]


def test_the_glossary_reading_marks_the_pieces_the_decoder_reads():
    html = reading_html(GEMM)
    marked = re.findall(r"<mark>(.*?)</mark>", html)
    assert marked == ["nvjet", "sm90", "256x128", "bz_coopA", "NNT"]
    says = dict(re.findall(r"<tr><td><code>(.*?)</code></td><td>(.*?)</td></tr>", html))
    assert says["sm90"] == "the architecture: sm90 (Hopper)" and says["NNT"] == "the layout: NNT"
    assert says["nvjet"] == "the family: cuBLAS, GEMM"

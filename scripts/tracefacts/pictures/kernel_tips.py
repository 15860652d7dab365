"""Kernel names that explain themselves: on a page's tables (and the facts box), each GPU
activity's name is a button that shows what the name says, as the kernel-name decoder
(scripts/tracefacts/facts/kernels.py) reads it: library, operation, architecture, data types,
tile, layout, tensor cores; "not decoded" where no rule reads it, never a guess.

A `KernelTips` serves one table or box: each distinct explanation is written once, as a hidden
note the buttons name with `aria-describedby` (what a screen reader says on focus), and
docs/javascripts/kernel-tips.js shows that note beside a button on tap, click, keyboard focus or
hover, and hides it on Escape. Names come from traces: they go in as text, escaped by
scripts/tracefacts/pictures/markup.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from ..facts.kernels import KernelName, NamePart, common, decode, dtypes_of, parts
from ..facts.terms import UNKNOWN
from .markup import Content, Markup, concat, h, join, table

NOT_DECODED_TEXT = ("Not decoded: no rule of the analyzer's table of kernel names reads this name, "
                    "so it says nothing here (nothing is guessed).")
# The GPU generation each compute capability names, for readers who know the cards, not the numbers.
GENERATIONS = {"sm50": "Maxwell", "sm52": "Maxwell", "sm60": "Pascal", "sm61": "Pascal",
               "sm70": "Volta", "sm72": "Volta", "sm75": "Turing", "sm80": "Ampere", "sm86": "Ampere",
               "sm87": "Ampere", "sm89": "Ada", "sm90": "Hopper", "sm100": "Blackwell",
               "sm101": "Blackwell", "sm103": "Blackwell", "sm120": "Blackwell"}


def explanation(k: KernelName, among: int = 1) -> tuple[str, ...]:
    """What a decoded name says, one line per thing it spells (unsaid ones left out). `among`: the
    number of names a name cut short could be; `k` is then what they all say (kernels.common)."""
    lines = []
    if among > 1:
        lines.append(f"Cut short: one of {among} GPU activities of the trace; what they all say:")
    if k.library == UNKNOWN:
        return (*lines, NOT_DECODED_TEXT)
    lines.append(f"Library: {k.library}")
    if k.operation:
        lines.append(f"Operation: {k.operation}" + (f" ({k.work_class})" if k.work_class != UNKNOWN else ""))
    else:
        lines.append("Operation: not decoded (work class unknown)")
    if k.arch:
        generation = GENERATIONS.get(k.arch)
        lines.append(f"Architecture: {k.arch}" + (f" ({generation})" if generation else ""))
    if k.dtypes:
        lines.append(f"Data types: {', '.join(k.dtypes)}")
    if k.tile:
        lines.append(f"Tile: {k.tile}")
    if k.layout:
        lines.append(f"Layout: {k.layout}")
    if k.tensor_cores is not None:
        lines.append(f"Tensor cores: {'yes' if k.tensor_cores else 'no'}")
    if k.detail and k.library.startswith("Triton"):  # the ops it fused: spelled out in the name
        lines.append("Fused: the ops its name lists after fused_")
    elif k.detail:
        lines.append(f"Also in the name: {k.detail}")
    return tuple(lines)


class KernelTips:
    """The kernel-name buttons of one table or box, and their notes (`notes()`, to be put in the
    same table or box). `scope` (the table's caption, the box's trace and window) keeps the notes'
    ids apart from those of another table on the page, as the same name there gets the same note."""

    def __init__(self, scope: str):
        self.scope = scope
        self._ids: dict[tuple[str, ...], str] = {}  # explanation -> its note's id, in first use

    def name(self, name: str, shown: Content = None, kind: str = "kernel",
             code_attrs: Mapping[str, object] | None = None) -> Markup:
        """`shown` (by default the name itself) in <code>, in a button that shows what the name of
        this GPU activity (`kind`: kernel, memcpy or memset) says."""
        return self.reading(decode(name, kind), name if shown is None else shown, code_attrs)

    def cut(self, names: Iterable[tuple[str, str]], shown: Content,
            code_attrs: Mapping[str, object] | None = None) -> Markup:
        """A name shown cut short, which can be any of these GPU activities (kind, name): what
        they all say."""
        names = set(names)
        if len(names) == 1:
            (kind, name), = names
            return self.name(name, shown, kind, code_attrs)
        return self.reading(common(decode(name, kind) for kind, name in names), shown, code_attrs,
                            len({name for _, name in names}))

    def reading(self, decoded: KernelName, shown: Content,
                code_attrs: Mapping[str, object] | None = None, among: int = 1) -> Markup:
        lines = explanation(decoded, among)
        if lines not in self._ids:
            self._ids[lines] = self._id(lines)
        return h("button", {"type": "button", "class": "ktip", "aria-describedby": self._ids[lines]},
                 h("code", code_attrs, shown))

    def _id(self, lines: tuple[str, ...]) -> str:
        digest = hashlib.sha1("\n".join((self.scope, *lines)).encode("utf-8", "surrogatepass"))
        return "kt-" + digest.hexdigest()[:8]

    def notes(self) -> Markup | None:
        """Each explanation once, hidden: the page shows one beside its button (kernel-tips.js)."""
        if not self._ids:
            return None
        return h("div", {"class": "ktip-notes", "hidden": True, "data-search-exclude": True},
                 [h("span", {"id": note}, join(h("br"), lines)) for lines, note in self._ids.items()])


def part_says(part: NamePart, k: KernelName) -> str:
    """What one piece of a name (kernels.parts) says, `k` the whole name decoded."""
    if part.field == "family":
        return f"the family: {k.library}" + (f", {k.operation}" if k.operation else "")
    if part.field == "operation":
        return f"the operation: {k.operation}"
    if part.field == "arch":
        generation = GENERATIONS.get(k.arch)
        return f"the architecture: {k.arch}" + (f" ({generation})" if generation else "")
    if part.field in ("types", "dtype"):
        found = dtypes_of(part.text)
        return ("data types: " if len(found) > 1 else "the data type: ") + ", ".join(found)
    if part.field == "tile":
        return f"the tile: {k.tile}"
    if part.field == "layout":
        return f"the layout: {k.layout}"
    if part.field == "tensor cores":
        return "tensor cores: " + ("yes" if k.tensor_cores else "no")
    if part.field == "detail":
        if k.library.startswith("Triton"):
            return "the ops Inductor fused into it, and a number that tells its kernels apart"
        if k.library == "ATen":
            return "the functor: what the kernel does to each element"
        return "a variant of the kernel (kept, not read further)"
    return ""


def reading_html(name: str, kind: str = "kernel", where: Content = None) -> Markup:
    """One kernel name read piece by piece, as the glossary teaches it: the name with the pieces
    the decoder reads marked, then a table of what each says (`where`: the name's source)."""
    decoded = decode(name, kind)
    pieces = parts(name, kind)
    marked = concat(*(h("mark", None, p.text) if p.field else p.text for p in pieces))
    rows = [[h("code", None, p.text), part_says(p, decoded)]
            for p in dict.fromkeys(p for p in pieces if p.field)]
    says = (table(["in the name", "says"], rows) if rows
            else h("p", None, NOT_DECODED_TEXT))
    return h("div", {"class": "kname"}, h("p", None, where) if where is not None else None,
             h("p", None, h("code", {"class": "kname-full"}, marked)), says)

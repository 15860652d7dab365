"""What a GPU activity's name says about it (`decode`): the library that wrote the kernel, the
operation, the architecture, data types, tile and layout where the name spells them, whether it
uses tensor cores where the name or the library says so, and its work class (terms.WORK_CLASSES):
matrix math, memory-bound kernels, copies and memsets, communication, or unknown.

One table of rules (`RULES`), tried in order, the first match wins; a name no rule reads is
`unknown`, never guessed, and so is a known library's kernel whose operation the table does not
know. Standard library only: the browser runs it too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from functools import lru_cache

from .terms import COMMUNICATION, COPIES, MATRIX_MATH, MEMORY_BOUND_KERNELS, UNKNOWN


@dataclass(frozen=True)
class KernelName:
    """A decoded name. Empty strings, () and None: the name does not say."""

    library: str  # "cuBLAS", "CUTLASS", "cuDNN", "FlashAttention", "Triton (Inductor)", ...
    operation: str  # "GEMM", "attention forward", "elementwise", "reduction", ...
    work_class: str  # one of terms.WORK_CLASSES
    arch: str = ""  # "sm90"
    dtypes: tuple[str, ...] = ()  # normalized: bf16, f16, f32, tf32, f64, fp8, i64, i32, i8, u8, bool
    tile: str = ""  # as the name writes it: "128x128", "256x128x8"
    layout: str = ""  # operand layout as the name writes it: "TNT", "nn"
    tensor_cores: bool | None = None
    detail: str = ""  # the functor, fused ops or variant the name gives


NOT_DECODED = KernelName(UNKNOWN, "", UNKNOWN)  # what a name no rule reads says: nothing


@dataclass(frozen=True)
class Rule:
    """A regular expression over the name (after a leading 'void ') and what a match means.
    `operation` may name groups ('attention {dir}'); groups named arch, tile, layout, types
    (read for data types) and detail fill those fields; `dtypes_from`: 'name' reads the data
    types of the whole name (C++ template arguments), 'types' those of the `types` group only,
    '' none (a name whose type letters are ambiguous)."""

    pattern: str
    library: str
    operation: str
    work_class: str
    tensor_cores: bool | None = None
    dtypes_from: str = "types"
    arch: str = ""  # where the name gives it in another spelling (ampere: sm80)

    @property
    def regex(self) -> re.Pattern:
        return _compiled(self.pattern)


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern)


_ANON = r"(?:\(anonymous namespace\)::)?"
_NATIVE = r"(?:at::native::)?" + _ANON
_ELEMENTWISE = (r"(?P<detail_kernel>vectorized_elementwise_kernel|unrolled_elementwise_kernel|"
                r"elementwise_kernel_with_index|index_elementwise_kernel|elementwise_kernel|"
                r"triu_tril_kernel)")

RULES: tuple[Rule, ...] = (
    # --- copies and memsets (also every memcpy and memset row, whatever its name) ---
    Rule(r"^Memcpy (?P<detail>\w+)", "CUDA driver", "memcpy {detail}", COPIES, dtypes_from=""),
    Rule(r"^Memset", "CUDA driver", "memset", COPIES, dtypes_from=""),
    # --- NCCL (RCCL keeps its names) ---
    Rule(r"^nccl(?:Dev)?Kernel_(?P<detail>[A-Za-z]+)", "NCCL", "{detail}", COMMUNICATION,
         dtypes_from="name"),
    # --- cuBLAS ---
    # nvjet: Hopper's cuBLAS GEMMs: nvjet_sm90_tst_128x128_64x6_2x1_v_bz_bias_TNT.
    Rule(r"^nvjet_(?:(?P<arch>sm\d+)_)?[a-z0-9]+_(?P<tile>\d+x\d+)_\d+x\d+_\d+x\d+_[vh]_"
         r"(?P<detail>(?:[A-Za-z0-9]+_)*?)(?P<layout>[NT]{3})$", "cuBLAS", "GEMM", MATRIX_MATH,
         dtypes_from=""),
    # xmma (cuBLAS and cublasLt): sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_...
    Rule(r"^(?P<arch>sm\d+)_xmma_gemm_(?P<types>[a-z0-9]+(?:_[a-z0-9]+)*?)_(?P<layout>[nt]{2})_"
         r"[nt]_tilesize(?P<tile>\d+x\d+x\d+)", "cuBLAS", "GEMM", MATRIX_MATH),
    # cuDNN's implicit-GEMM convolutions in xmma: sm80_xmma_fprop_implicit_gemm_...
    Rule(r"^(?P<arch>sm\d+)_xmma_(?P<detail>fprop|dgrad|wgrad)_\w*?implicit_gemm_"
         r"(?P<types>[a-z0-9]+(?:_[a-z0-9]+)*?)_(?:[nt]hwc|[nt]chw)", "cuDNN",
         "convolution {detail}", MATRIX_MATH),
    # Pre-Hopper cuBLAS: ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn,
    # volta_sgemm_128x64_nn, turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn.
    *(Rule(rf"^{family}_(?P<types>(?:[a-z0-9]+_)?[a-z0-9]*gemm)\w*?_(?P<tile>\d+x\d+)"
           rf"(?:_\w+?)?_(?P<layout>[nt]{{2}})$", "cuBLAS", "GEMM", MATRIX_MATH, arch=arch)
      for family, arch in (("maxwell", "sm50"), ("volta", "sm70"), ("turing", "sm75"),
                           ("ampere", "sm80"))),
    Rule(r"^cublasLt::splitKreduce_kernel", "cuBLAS", "split-K reduction", MEMORY_BOUND_KERNELS,
         dtypes_from="name"),
    Rule(r"^gemmk1_kernel<", "cuBLAS", "GEMM (k=1)", MATRIX_MATH, dtypes_from="name"),
    Rule(r"^(?:gemv2[NT]_kernel|gemvNSP_kernel|gemvx_kernel|gemv_kernel)", "cuBLAS", "GEMV",
         MATRIX_MATH, dtypes_from="name"),
    # --- CUTLASS ---
    # cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>,
    # cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8,
    # cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nt_align1 (no K tile and stages)
    Rule(r"(?:^|<)cutlass_(?P<arch>\d+)_(?P<detail>simt|tensorop|wmma_tensorop)_"
         r"(?P<types>(?:[a-z0-9]+_)*?[a-z0-9]*gemm\w*?)_(?P<tile>\d+x\d+)_(?:\d+x\d+_)?"
         r"(?P<layout>[nt]{2})_align",
         "CUTLASS", "GEMM", MATRIX_MATH),
    # cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_...
    Rule(r"(?:^|<)cutlass3x_(?P<arch>sm\d+)_(?P<detail>tensorop|simt)_(?:s|h|i)?gemm_"
         r"(?P<types>[a-z0-9]+(?:_[a-z0-9]+)*?)_(?P<tile>\d+x\d+x\d+)_\d+x\d+x\d+_\d+_"
         r"(?P<layout>[nt]{3})", "CUTLASS", "GEMM", MATRIX_MATH),
    # PyTorch's memory-efficient attention (xFormers' CUTLASS kernels):
    # fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>)
    Rule(r"^fmha_cutlass(?P<detail>[FB])_(?P<types>[a-z0-9]+)_\w*?(?P<tile>\d+x\d+)\w*?_"
         r"(?P<arch>sm\d+)", "CUTLASS", "memory-efficient attention {detail}", MATRIX_MATH),
    # --- cuDNN ---
    # cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_...
    # ("f16" also in the names of its bf16 kernels: the data type is left unsaid)
    Rule(r"^cudnn_generated_\w*?sdpa_(?P<arch>sm\d+)_flash_(?P<detail>fprop|bprop)_"
         r"(?:wgmma|wmma|hmma|mma)_\w*?(?P<tile>\d+x\d+x\d+)", "cuDNN", "attention {detail}",
         MATRIX_MATH, tensor_cores=True, dtypes_from=""),
    Rule(r"^cudnn::fusion::compute_dot_do_o", "cuDNN", "attention backward: dO·O row sums",
         MEMORY_BOUND_KERNELS, dtypes_from=""),
    Rule(r"^cudnn::fusion::convert_dq", "cuDNN", "attention backward: dQ conversion",
         MEMORY_BOUND_KERNELS, dtypes_from=""),
    Rule(r"^cudnn::fusion::lean_reduction_kernel", "cuDNN", "reduction", MEMORY_BOUND_KERNELS,
         dtypes_from=""),
    Rule(r"^(?:cudnn::\w+::)?implicit_convolve_(?P<types>[a-z]gemm)", "cuDNN", "convolution",
         MATRIX_MATH),
    Rule(r"^cudnn::(?:\w+::)?bn_", "cuDNN", "batch norm", MEMORY_BOUND_KERNELS, dtypes_from="name"),
    # --- FlashAttention (PyTorch's copy, the flash_attn package, FlashAttention 3) ---
    Rule(r"^(?:pytorch_flash::|flash::)?flash_fwd_splitkv_combine_kernel", "FlashAttention",
         "attention split-KV combine", MEMORY_BOUND_KERNELS, dtypes_from="name"),
    Rule(r"^(?:pytorch_flash::|flash::)?flash_(?P<detail>fwd|bwd)\w*?_kernel<"
         r"Flash_(?:fwd|bwd)_kernel_traits<\d+, (?P<tile_m>\d+), (?P<tile_n>\d+)",
         "FlashAttention", "attention {detail}", MATRIX_MATH, tensor_cores=True,
         dtypes_from="name"),
    Rule(r"flash::FlashAttn(?P<detail>Fwd|Bwd)(?P<arch>Sm\d+)", "FlashAttention",
         "attention {detail}", MATRIX_MATH, tensor_cores=True, dtypes_from="name"),
    # --- Triton kernels that Inductor (torch.compile) generated: triton_{kind}_fused_{ops}_{n} ---
    Rule(r"^triton_poi_(?P<detail>\w+)", "Triton (Inductor)", "pointwise", MEMORY_BOUND_KERNELS,
         dtypes_from=""),
    Rule(r"^triton_red_(?P<detail>\w+)", "Triton (Inductor)", "reduction", MEMORY_BOUND_KERNELS,
         dtypes_from=""),
    Rule(r"^triton_per_(?P<detail>\w+)", "Triton (Inductor)", "persistent reduction",
         MEMORY_BOUND_KERNELS, dtypes_from=""),
    Rule(r"^triton_for_(?P<detail>\w+)", "Triton (Inductor)", "foreach", MEMORY_BOUND_KERNELS,
         dtypes_from=""),
    Rule(r"^triton_tem_(?P<detail>fused_(?:\w+_)?(?:mm|bmm|addmm|baddbmm|convolution|"
         r"flex_attention|flex_attention_backward)(?:_\w+)?)$", "Triton (Inductor)",
         "template (matrix math)", MATRIX_MATH, dtypes_from=""),
    Rule(r"^triton_tem_(?P<detail>\w+)", "Triton (Inductor)", "template", UNKNOWN,
         dtypes_from=""),
    # --- ATen's native CUDA kernels ---
    Rule(r"^at::cuda::philox::unpack", "ATen", "RNG seed unpack", MEMORY_BOUND_KERNELS,
         dtypes_from=""),
    Rule(rf"^{_NATIVE}reduce_kernel<", "ATen", "reduction", MEMORY_BOUND_KERNELS,
         dtypes_from="name"),
    Rule(rf"^{_NATIVE}(?:softmax_warp_(?P<detail>forward|backward)|cunn_SoftMax\w*|"
         r"\w*[Ss]oft[Mm]ax\w*)<", "ATen", "softmax {detail}", MEMORY_BOUND_KERNELS,
         dtypes_from="name"),
    Rule(rf"^{_NATIVE}(?P<detail>\w*(?:layer_norm|LayerNorm|GammaBeta|rms_norm|RowwiseMoments|"
         r"batch_norm|BatchNorm|group_norm|GroupNorm)\w*)<", "ATen", "norm", MEMORY_BOUND_KERNELS,
         dtypes_from="name"),
    Rule(rf"^{_NATIVE}(?P<detail>CatArrayBatchedCopy\w*)<", "ATen", "cat", MEMORY_BOUND_KERNELS,
         dtypes_from="name"),
    Rule(rf"^{_NATIVE}multi_tensor_apply_kernel<", "ATen", "foreach (multi-tensor apply)",
         MEMORY_BOUND_KERNELS, dtypes_from="name"),
    Rule(rf"^{_NATIVE}(?P<detail>\w*dropout\w*)<", "ATen", "dropout", MEMORY_BOUND_KERNELS,
         dtypes_from="name"),
    Rule(rf"^{_NATIVE}(?P<detail>indexSelect\w*|\w*gather\w*|\w*scatter\w*|index_put\w*|"
         r"compute_grad_weight\w*|krn_partial\w*|compute_num_of_partial_segments|"
         r"embedding\w*|take_\w*)<", "ATen", "indexing", MEMORY_BOUND_KERNELS,
         dtypes_from="name"),
    Rule(rf"^{_NATIVE}(?P<detail>nll_loss\w*|\w*cross_entropy\w*)<", "ATen", "loss",
         MEMORY_BOUND_KERNELS, dtypes_from="name"),
    Rule(rf"^{_NATIVE}{_ELEMENTWISE}<", "ATen", "elementwise", MEMORY_BOUND_KERNELS,
         dtypes_from="name"),
    # CUB, as ATen ships it (sort, scan, unique): data movement
    Rule(r"^(?:at_cuda_detail::)?cub::\S*?(?P<detail>Radix|Scan|Unique|Select|Reduce|Histogram)",
         "CUB", "{detail}", MEMORY_BOUND_KERNELS, dtypes_from=""),
    Rule(rf"^{_NATIVE}(?P<detail>\w+)<", "ATen", "", UNKNOWN, dtypes_from=""),
)
# An ATen kernel whose name starts with a bare template name (elementwise_kernel<...>) is told by
# at::native in it; `_NATIVE` makes the prefix optional, so those rules also need this.
_ATEN_RULES = frozenset(i for i, rule in enumerate(RULES) if rule.library == "ATen"
                        and rule.pattern.startswith("^" + _NATIVE))

_OPERATIONS = {"fprop": "forward", "bprop": "backward", "fwd": "forward", "bwd": "backward",
               "Fwd": "forward", "Bwd": "backward", "F": "forward", "B": "backward",
               "forward": "forward", "backward": "backward",
               "AllReduce": "all-reduce", "AllGather": "all-gather", "Broadcast": "broadcast",
               "ReduceScatter": "reduce-scatter", "Reduce": "reduce", "SendRecv": "send/receive",
               "Send": "send", "Recv": "receive", "AllToAll": "all-to-all",
               "Radix": "radix sort", "Scan": "scan", "Unique": "unique", "Select": "select",
               "Histogram": "histogram"}
# Data types as names write them, normalized; searched in C++ template arguments ('name') or in
# a type field such as xmma's f32f32_f32f32_f32 or CUTLASS's sgemm ('types').
_W = r"(?<![A-Za-z0-9])"  # not inside a longer word (an underscore may come before: NCCL's _float)
_E = r"(?![A-Za-z0-9])"
_TYPE_WORDS = (
    (rf"c10::BFloat16|__nv_bfloat16|cutlass::bfloat16_t|{_W}bfloat16{_E}|(?<![a-z])bf16", "bf16"),
    (rf"c10::Half|cutlass::half_t|__half{_E}|{_W}half{_E}|(?<![a-z0-9])fp?16|(?<![a-z])hgemm",
     "f16"),
    (r"(?<![a-z])tf32", "tf32"),
    (rf"{_W}float{_E}|(?<![a-z0-9t])fp?32|(?<![a-z])sgemm", "f32"),
    (rf"{_W}double{_E}|(?<![a-z0-9])fp?64|(?<![a-z])dgemm", "f64"),
    (r"Float8_e4m3\w*|Float8_e5m2\w*|(?<![a-z])e4m3|(?<![a-z])e5m2|(?<![a-z])fp8", "fp8"),
    (rf"(?<!unsigned ){_W}long{_E}|(?<![a-z])i64|(?<![a-z])int64", "i64"),  # not an index type
    (rf"(?<!unsigned ){_W}int{_E}|(?<![a-z])i32|(?<![a-z])int32", "i32"),
    (r"unsigned char|(?<![a-z])u8(?![0-9])|(?<![a-z])uint8", "u8"),
    (r"(?<![a-z])i8(?![0-9])|(?<![a-z])int8|(?<!un)signed char", "i8"),
    (rf"{_W}bool{_E}", "bool"),
)
_TYPES = re.compile("|".join(f"(?P<t{i}>{pattern})" for i, (pattern, _) in enumerate(_TYPE_WORDS)))
_FLOATING = frozenset({"bf16", "f16", "tf32", "f32", "f64", "fp8"})
# Names that say whether the kernel runs on tensor cores.
_TENSOR_CORES = re.compile(r"wgmma|gmma|hmma|imma|wmma|tensorop|(?<![a-z])[sihq]\d{3,5}gemm")
_NO_TENSOR_CORES = re.compile(r"ffma|simt|(?<![a-z0-9])[sdh]gemm")


def decode(name: str, kind: str = "kernel") -> KernelName:
    """What this GPU activity's name says (`kind`: kernel, memcpy or memset, the row's)."""
    return _decode(name, kind)


@lru_cache(maxsize=4096)
def _decode(name: str, kind: str) -> KernelName:
    text = name.removeprefix("void ").strip()
    matched = _match(text, kind)
    if matched is not None:
        return _read(*matched, text)
    return KernelName("CUDA driver", kind, COPIES) if kind in ("memcpy", "memset") else NOT_DECODED


def _match(text: str, kind: str) -> tuple[Rule, re.Match] | None:
    """The first rule that reads the name (without its 'void '), and its match."""
    if kind in ("memcpy", "memset"):  # whatever its name (ROCm: CopyDeviceToDevice)
        found = RULES[0].regex.search(text) if kind == "memcpy" else None
        return (RULES[0], found) if found else None
    for number, rule in enumerate(RULES):
        found = rule.regex.search(text)
        if found is None or (number in _ATEN_RULES and "at::native" not in text
                             and not text.startswith(("softmax_warp", "(anonymous namespace)::softmax"))):
            continue
        return rule, found
    return None


def _read(rule: Rule, found: re.Match, text: str) -> KernelName:
    groups = {k: v for k, v in found.groupdict().items() if v}
    detail = groups.get("detail", "").strip("_")
    if "detail_kernel" in groups:  # an ATen elementwise kernel: its functors say what it does
        detail = "/".join(dict.fromkeys(
            f for f in _FUNCTORS.findall(_template_part(text)) if f not in _NOT_FUNCTORS))
    operation = rule.operation.format(detail=_OPERATIONS.get(detail, detail)).strip()
    if "{detail}" in rule.operation:
        detail = ""  # said by the operation
    arch = rule.arch or groups.get("arch", "")
    arch = ("sm" + arch if arch.isdigit() else arch).lower()
    tile = groups.get("tile") or "x".join(filter(None, (groups.get("tile_m"), groups.get("tile_n"))))
    dtypes = dtypes_of(groups.get("types", "")) if rule.dtypes_from == "types" else ()
    if rule.dtypes_from == "name":
        dtypes = dtypes_of(_template_part(text))
        if any(t in _FLOATING for t in dtypes):  # then int and long are index types
            dtypes = tuple(t for t in dtypes if t not in ("i32", "i64"))
    tensor_cores = rule.tensor_cores
    if tensor_cores is None and rule.work_class == MATRIX_MATH:
        if _TENSOR_CORES.search(text):
            tensor_cores = True
        elif _NO_TENSOR_CORES.search(text):
            tensor_cores = False
    return KernelName(rule.library, operation, rule.work_class, arch, dtypes, tile,
                      groups.get("layout", ""), tensor_cores, detail)


_FUNCTORS = re.compile(r"\b(\w*Functor\w*|\w+_kernel_cuda|\w+_kernel_impl\w*|\w+KernelImpl|"
                       r"\w+_kernel(?=\())")
_NOT_FUNCTORS = frozenset({"gpu_kernel_impl", "gpu_kernel_impl_nocast", "elementwise_kernel",
                           "vectorized_elementwise_kernel", "unrolled_elementwise_kernel"})


def _template_part(text: str) -> str:
    """A C++ name without its function arguments (ints and pointers that are counts and sizes,
    not data types): up to the first '(' outside its template brackets."""
    text = text.replace("(anonymous namespace)", "")
    depth = 0
    for i, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth <= 0:
            return text[:i]
    return text


def dtypes_of(text: str) -> tuple[str, ...]:
    """The data types a name (or a part of one) spells, normalized, in order of first mention."""
    found: dict[str, None] = {}
    for match in _TYPES.finditer(text):
        found[_TYPE_WORDS[int(match.lastgroup[1:])][1]] = None
    return tuple(found)


def work_class(name: str, kind: str = "kernel") -> str:
    """The work class of a GPU activity (terms.WORK_CLASSES), by its name and row kind."""
    return _decode(name, kind).work_class


def common(decoded: Iterable[KernelName]) -> KernelName:
    """What several decoded names all say (a name a table shows cut short can be any of those it
    begins): each field they share, the others unsaid, as in NOT_DECODED."""
    found = list(decoded)
    if not found:
        return NOT_DECODED
    return KernelName(**{f.name: getattr(found[0], f.name)
                         if all(getattr(k, f.name) == getattr(found[0], f.name) for k in found)
                         else getattr(NOT_DECODED, f.name) for f in fields(KernelName)})


@dataclass(frozen=True)
class NamePart:
    """A piece of a name and what it gives (`field`): one of PART_FIELDS, or "" for a piece the
    decoder does not read."""

    text: str
    field: str = ""


# family: the start that tells the library and operation (nvjet, triton_poi, fmha_cutlass);
# operation: a piece that names it (fprop, AllReduce, an ATen kernel template); dtype: one data
# type (C++ template arguments); types: a field of type letters (f32f32_f32f32_f32, bf16).
PART_FIELDS = ("family", "operation", "arch", "types", "dtype", "tile", "layout", "tensor cores", "detail")
_GROUP_FIELDS = {"arch": "arch", "types": "types", "tile": "tile", "tile_m": "tile", "tile_n": "tile",
                 "layout": "layout", "detail_kernel": "operation"}


def parts(name: str, kind: str = "kernel") -> tuple[NamePart, ...]:
    """The name cut into the pieces the decoder reads, each with what it gives, and the pieces
    between them (field ""): joined, they are the name again; a name no rule reads is one piece.
    What teaches reading a kernel name (the glossary shows it), held to `decode` by its tests."""
    stripped = name.removeprefix("void ")
    start = len(name) - len(stripped) + len(stripped) - len(stripped.lstrip())
    text = stripped.strip()
    matched = _match(text, kind)
    if matched is None:
        return (NamePart(name),) if name else ()
    rule, found = matched
    decoded = _read(rule, found, text)
    spans = []  # (start, end, field) in `text`; of two at one place, the first listed is kept
    if decoded.tensor_cores is not None:  # before the detail that may hold it (CUTLASS's simt)
        marker = (_TENSOR_CORES if decoded.tensor_cores else _NO_TENSOR_CORES).search(text)
        if marker:
            spans.append((marker.start(), marker.end(), "tensor cores"))
    groups = [(found.start(g), found.end(g), g) for g, v in found.groupdict().items() if v]
    first = min((a for a, _, _ in groups), default=found.end())
    family_start = found.start() + (1 if text[found.start():found.start() + 1] == "<" else 0)
    family_end = family_start + len(text[family_start:first].rstrip("_:<( "))
    if family_end > family_start:
        spans.append((family_start, family_end, "family"))
    for a, b, group in groups:
        field = _GROUP_FIELDS.get(group) or ("operation" if "{detail}" in rule.operation else "detail")
        if group == "detail":
            b = a + len(text[a:b].rstrip("_"))
        spans.append((a, b, field))
    end = _template_end(text)
    if rule.dtypes_from == "name":
        for match in _TYPES.finditer(text, 0, end):
            if _TYPE_WORDS[int(match.lastgroup[1:])][1] in decoded.dtypes:
                spans.append((match.start(), match.end(), "dtype"))
    if "detail_kernel" in found.groupdict() and found.group("detail_kernel"):
        spans += [(m.start(), m.end(), "detail") for m in _FUNCTORS.finditer(text, 0, end)
                  if m.group(0) not in _NOT_FUNCTORS]
    out, at = [], 0
    for a, b, field in sorted(spans, key=lambda span: (span[0], -span[1])):
        if a < at or a == b:
            continue  # inside a piece already given (a type field's letters, a tile in a detail)
        if a > at:
            out.append(NamePart(text[at:a]))
        out.append(NamePart(text[a:b], field))
        at = b
    if at < len(text):
        out.append(NamePart(text[at:]))
    head = name[:start] + out[0].text if out[0].field == "" else name[:start]
    tail = name[start + len(text):]
    pieces = ([NamePart(head)] if head else []) + (out if out[0].field else out[1:])
    if tail:
        pieces.append(NamePart(tail))
    return tuple(pieces)


def _template_end(text: str) -> int:
    """Where a C++ name's function arguments begin (as `_template_part` cuts it): its length if
    it has none."""
    depth, i = 0, 0
    while i < len(text):
        if text.startswith("(anonymous namespace)", i):
            i += len("(anonymous namespace)")
            continue
        char = text[i]
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth <= 0:
            return i
        i += 1
    return len(text)

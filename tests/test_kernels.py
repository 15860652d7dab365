"""The kernel-name decoder (scripts/tracefacts/facts/kernels.py): every GPU activity name of the
frozen traces against the work class and library a person read off it (tests/fixtures/
kernel_names.tsv, gathered by tests/fixtures/gather_kernel_names.py), hand-written names of each
family with every field the name spells, names it must not guess, and the work classes in the
window facts."""

from __future__ import annotations

import json

import pytest

from scripts.tracefacts.facts import kernels
from scripts.tracefacts.facts.analysis import WORK_CLASSES, facts, summary_text
from scripts.tracefacts.facts.kernels import KernelName, decode
from scripts.tracefacts.facts.terms import (COMMUNICATION, COPIES, MATRIX_MATH,
                                           MEMORY_BOUND_KERNELS, UNKNOWN)
from scripts.tracefacts.model.trace import build_trace
from tests.fixtures import gather_kernel_names
from tests.fixtures.handmade import ADD, GEMM, NCCL, TRITON, TraceWriter

TABLE = gather_kernel_names.read_table()


def test_the_table_of_real_names_is_read_and_complete():
    assert len(TABLE) > 150
    assert not [row["name"] for row in TABLE if "?" in (row["work_class"], row["library"])]
    assert {row["work_class"] for row in TABLE} <= set(WORK_CLASSES)
    # what the traces hold: GEMMs of three libraries, attention of four, Inductor's Triton, ATen
    assert {"cuBLAS", "CUTLASS", "cuDNN", "FlashAttention", "Triton (Inductor)", "ATen", "CUB"} <= {
        row["library"] for row in TABLE}


@pytest.mark.parametrize("row", TABLE, ids=lambda row: row["name"][:60])
def test_real_names_decode_to_the_class_and_library_read_off_them(row):
    found = decode(row["name"], row["kind"])
    assert (found.work_class, found.library) == (row["work_class"], row["library"])


@pytest.mark.slow
def test_the_table_holds_every_name_of_the_frozen_traces():
    """Run tests/fixtures/gather_kernel_names.py (then read the new names) when this fails."""
    assert gather_kernel_names.gather() == {(row["kind"], row["name"]) for row in TABLE}


# (name, kind, what the name says), written out by hand for each family.
FAMILIES = [
    ("nvjet_sm90_tst_128x128_64x6_2x1_v_bz_splitK_TNT", "kernel",
     KernelName("cuBLAS", "GEMM", MATRIX_MATH, "sm90", (), "128x128", "TNT", None, "bz_splitK")),
    ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNN", "kernel",  # newer cuBLAS: no architecture
     KernelName("cuBLAS", "GEMM", MATRIX_MATH, "", (), "256x128", "TNN", None, "bz_coopA")),
    ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_stage4_warpsize2x2x1_tensor16x8x16"
     "_execute_kernel__5x_cublas", "kernel",
     KernelName("cuBLAS", "GEMM", MATRIX_MATH, "sm80", ("bf16", "f32"), "128x128x64", "tn", None)),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_"
     "alignc4_execute_kernel__5x_cublas", "kernel",
     KernelName("cuBLAS", "GEMM", MATRIX_MATH, "sm80", ("f32",), "256x128x8", "nn", False)),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", "kernel",
     KernelName("cuBLAS", "GEMM", MATRIX_MATH, "sm80", ("bf16",), "128x128", "tn", True)),
    ("volta_sgemm_128x64_nn", "kernel",
     KernelName("cuBLAS", "GEMM", MATRIX_MATH, "sm70", ("f32",), "128x64", "nn", False)),
    ("turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn", "kernel",
     KernelName("cuBLAS", "GEMM", MATRIX_MATH, "sm75", ("f16",), "256x128", "tn", True)),
    ("maxwell_sgemm_128x64_nt", "kernel",
     KernelName("cuBLAS", "GEMM", MATRIX_MATH, "sm50", ("f32",), "128x64", "nt", False)),
    ("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>"
     "(float const*)", "kernel", KernelName("cuBLAS", "GEMV", MATRIX_MATH, "", ("f32",))),
    ("void gemmk1_kernel<int, float, 256, 5, false, false, false, false, float, 0>(float)", "kernel",
     KernelName("cuBLAS", "GEMM (k=1)", MATRIX_MATH, "", ("f32",))),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, "
     "false>(cublasLt::cublasSplitKParams<float>, float const*)", "kernel",
     KernelName("cuBLAS", "split-K reduction", MEMORY_BOUND_KERNELS, "", ("f32", "bf16"))),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_sgemm_"
     "128x256_8x4_nt_align1::Params)", "kernel",
     KernelName("CUTLASS", "GEMM", MATRIX_MATH, "sm80", ("f32",), "128x256", "nt", False, "simt")),
    ("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8", "kernel",
     KernelName("CUTLASS", "GEMM", MATRIX_MATH, "sm80", ("bf16",), "64x64", "tn", True, "tensorop")),
    ("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_"
     "warpspecialized_cooperative_epi_tma", "kernel",
     KernelName("CUTLASS", "GEMM", MATRIX_MATH, "sm90", ("bf16", "f32"), "128x256x64", "tnn", True,
                "tensorop")),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::"
     "bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", "kernel",
     KernelName("CUTLASS", "memory-efficient attention forward", MATRIX_MATH, "sm80", ("bf16",),
                "64x64")),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_"
     "kernel0_0", "kernel",  # its 'f16' is in its bf16 kernels' names too: left unsaid
     KernelName("cuDNN", "attention forward", MATRIX_MATH, "sm90", (), "64x128x64", "", True)),
    ("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*, void const*)", "kernel",
     KernelName("cuDNN", "attention backward: dO·O row sums", MEMORY_BOUND_KERNELS)),
    ("sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4",
     "kernel", KernelName("cuDNN", "convolution forward", MATRIX_MATH, "sm80", ("bf16", "f32"))),
    ("void cudnn::cnn::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, "
     "true>(int, int, int, float const*)", "kernel",
     KernelName("cuDNN", "convolution", MATRIX_MATH, "", ("f32",), tensor_cores=False)),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct)",
     "kernel", KernelName("cuDNN", "batch norm", MEMORY_BOUND_KERNELS, "", ("f32",))),
    ("void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*)", "kernel",
     KernelName("cuDNN", "attention backward: dQ conversion", MEMORY_BOUND_KERNELS)),
    ("void cudnn::fusion::lean_reduction_kernel<false, false, false>(void*, float*)", "kernel",
     KernelName("cuDNN", "reduction", MEMORY_BOUND_KERNELS)),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, "
     "false>(pytorch_flash::Flash_fwd_params)", "kernel",
     KernelName("FlashAttention", "attention forward", MATRIX_MATH, "", ("bf16",), "128x64", "", True)),
    ("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 4, "
     "4, 4, false, false, cutlass::half_t> >(Flash_bwd_params)", "kernel",
     KernelName("FlashAttention", "attention backward", MATRIX_MATH, "", ("f16",), "128x128", "", True)),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
     "CollectiveMainloopFwdSm90<2, cute::tuple<int>, cutlass::bfloat16_t> > > >(void)", "kernel",
     KernelName("FlashAttention", "attention forward", MATRIX_MATH, "sm90", ("bf16",), "", "", True)),
    ("void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, "
     "false, false, cutlass::bfloat16_t> >, 4, 1, true>(pytorch_flash::Flash_fwd_params)", "kernel",
     KernelName("FlashAttention", "attention split-KV combine", MEMORY_BOUND_KERNELS, "", ("bf16",))),
    ("triton_poi_fused_add_mul_0", "kernel",
     KernelName("Triton (Inductor)", "pointwise", MEMORY_BOUND_KERNELS, detail="fused_add_mul_0")),
    ("triton_red_fused_mean_pow_rsqrt_1", "kernel",
     KernelName("Triton (Inductor)", "reduction", MEMORY_BOUND_KERNELS, detail="fused_mean_pow_rsqrt_1")),
    ("triton_per_fused__softmax_2", "kernel",
     KernelName("Triton (Inductor)", "persistent reduction", MEMORY_BOUND_KERNELS,
                detail="fused__softmax_2")),
    ("triton_for_fused_1", "kernel",
     KernelName("Triton (Inductor)", "foreach", MEMORY_BOUND_KERNELS, detail="fused_1")),
    ("triton_tem_fused_addmm_relu_3", "kernel",
     KernelName("Triton (Inductor)", "template (matrix math)", MATRIX_MATH, detail="fused_addmm_relu_3")),
    ("triton_tem_fused_flex_attention_0", "kernel",
     KernelName("Triton (Inductor)", "template (matrix math)", MATRIX_MATH,
                detail="fused_flex_attention_0")),
    (ADD, "kernel",
     KernelName("ATen", "elementwise", MEMORY_BOUND_KERNELS, "", ("f32",), detail="CUDAFunctor_add")),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, "
     "float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float>)", "kernel",
     KernelName("ATen", "reduction", MEMORY_BOUND_KERNELS, "", ("f32",))),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, "
     "false>(int, float, c10::BFloat16 const*)", "kernel",
     KernelName("ATen", "norm", MEMORY_BOUND_KERNELS, "", ("bf16", "f32"),
                detail="vectorized_layer_norm_kernel")),
    ("at::cuda::philox::unpack_cudnn(at::PhiloxCudaState, long*, long*)", "kernel",
     KernelName("ATen", "RNG seed unpack", MEMORY_BOUND_KERNELS)),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::"
     "OpaqueType<2u>, unsigned int, 4, 64, 64>(int)", "kernel",
     KernelName("ATen", "cat", MEMORY_BOUND_KERNELS, detail="CatArrayBatchedCopy")),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, "
     "1, 1, 0>, std::multiplies<float>, float>(int)", "kernel",
     KernelName("ATen", "foreach (multi-tensor apply)", MEMORY_BOUND_KERNELS, "", ("f32",))),
    ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, "
     "unsigned int, 1, 8, bool>(int)", "kernel",
     KernelName("ATen", "dropout", MEMORY_BOUND_KERNELS, "", ("bf16", "f32", "bool"),
                detail="fused_dropout_kernel_vec")),
    ("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int)", "kernel",
     KernelName("ATen", "indexing", MEMORY_BOUND_KERNELS, "", ("i64",), detail="vectorized_gather_kernel")),
    ("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, "
     "long>(float*)", "kernel",
     KernelName("ATen", "loss", MEMORY_BOUND_KERNELS, "", ("f32",),
                detail="nll_loss_forward_reduce_cuda_kernel_2d")),
    ("void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 10, false, "
     "false>(c10::Half*, c10::Half const*, int, int, int)", "kernel",
     KernelName("ATen", "softmax forward", MEMORY_BOUND_KERNELS, "", ("f16", "f32"))),
    ("void at::native::vectorized_elementwise_kernel<2, at::native::FillFunctor<long>, "
     "std::array<char*, 1ul> >(int, at::native::FillFunctor<long>, std::array<char*, 1ul>)", "kernel",
     KernelName("ATen", "elementwise", MEMORY_BOUND_KERNELS, "", ("i64",), detail="FillFunctor")),
    ("void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel<at_cuda_detail::"
     "cub::detail::radix::policy_hub<long> >(int)", "kernel",
     KernelName("CUB", "radix sort", MEMORY_BOUND_KERNELS)),
    (NCCL, "kernel", KernelName("NCCL", "all-reduce", COMMUNICATION, "", ("f32",))),
    ("ncclKernel_AllGather_RING_LL_Sum_bf16(ncclWorkElem)", "kernel",
     KernelName("NCCL", "all-gather", COMMUNICATION, "", ("bf16",))),
    ("Memcpy DtoH (Device -> Pageable)", "memcpy", KernelName("CUDA driver", "memcpy DtoH", COPIES)),
    ("CopyDeviceToDevice", "memcpy", KernelName("CUDA driver", "memcpy", COPIES)),  # ROCm's
    ("Memset (Device)", "memset", KernelName("CUDA driver", "memset", COPIES)),
]


@pytest.mark.parametrize(("name", "kind", "expected"), FAMILIES, ids=[f[0][:50] for f in FAMILIES])
def test_each_family_decodes_to_what_its_name_says(name, kind, expected):
    assert decode(name, kind) == expected


@pytest.mark.parametrize("name", [
    "causal_attention_kernel",  # a Triton kernel of the reader's own: its name says nothing
    "gelu_tanh_mul_kernel",
    "my_gemm",
    "Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI32x32x8x1_SN_1LDSB0",  # hipBLASLt: no rule for it yet
    "",
])
def test_names_no_rule_reads_are_unknown_never_guessed(name):
    assert decode(name) == KernelName(UNKNOWN, "", UNKNOWN)


UNKNOWN_WORK = ["void at::native::(anonymous namespace)::brand_new_kernel<float>(float*)",
                "triton_tem_fused_cumsum_0"]


def test_a_known_library_with_an_unknown_operation_is_unknown_work():
    found = decode(UNKNOWN_WORK[0])
    assert (found.library, found.operation, found.work_class) == ("ATen", "", UNKNOWN)
    assert decode(UNKNOWN_WORK[1]).work_class == UNKNOWN  # a template, not a GEMM one
    # A name that only mentions an attention op among those it fused is pointwise work.
    assert decode("triton_poi_fused__scaled_dot_product_cudnn_attention_clone_5").work_class == (
        MEMORY_BOUND_KERNELS)


def test_every_rule_reads_some_name_of_the_tables():
    """No rule without a test: each one is the first to match a name written out here or read
    from the traces."""
    names = ([(name, kind) for name, kind, _ in FAMILIES] + [(r["name"], r["kind"]) for r in TABLE]
             + [(name, "kernel") for name in UNKNOWN_WORK])
    first = {next((n for n, rule in enumerate(kernels.RULES)
                   if rule.regex.search(name.removeprefix("void ")) and decode(name, kind).library == rule.library),
                  None) for name, kind in names}
    assert [rule.pattern for n, rule in enumerate(kernels.RULES) if n not in first] == []


def classes_trace() -> dict:
    """One GEMM 30 us, two elementwise adds 10 us each, a Triton kernel 5 us, a memcpy 5 us."""
    w = TraceWriter()
    w.launch(0, 2, [("kernel", GEMM, 3, 30, 7)])
    w.launch(3, 2, [("kernel", ADD, 33, 10, 7)])
    w.launch(6, 2, [("kernel", ADD, 43, 10, 7)])
    w.launch(9, 2, [("kernel", TRITON, 53, 5, 7)], api="cuLaunchKernel", cat="cuda_driver")
    w.launch(12, 2, [("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 58, 5, 7)], api="cudaMemcpyAsync")
    return w.trace()


def test_window_facts_give_the_work_classes_and_each_top_kernel_its_class():
    result = facts(build_trace(classes_trace()))
    shares = {c.work_class: (c.count, c.total_us, c.share_pct) for c in result.window.work_classes}
    # of 60 us: GEMM 30; adds 20 and Triton 5; memcpy 5
    assert shares == {MATRIX_MATH: (1, 30, 50), MEMORY_BOUND_KERNELS: (3, 25, pytest.approx(100 * 25 / 60)),
                      COPIES: (1, 5, pytest.approx(100 * 5 / 60))}
    assert [c.work_class for c in result.window.work_classes] == [MATRIX_MATH, MEMORY_BOUND_KERNELS, COPIES]
    assert [(k.name, k.work_class) for k in result.window.top_kernels][:2] == [
        (GEMM, MATRIX_MATH), (ADD, MEMORY_BOUND_KERNELS)]
    data = json.loads(json.dumps(result.to_dict()))
    assert data["window"]["top_kernels"][0]["work_class"] == MATRIX_MATH
    assert data["window"]["work_classes"][0] == {"work_class": MATRIX_MATH, "count": 1,
                                                 "total_us": 30.0, "share_pct": 50.0}
    text = summary_text(result)
    assert "GPU work by class: matrix math 50.0% · memory-bound kernels 41.7% · copies and memsets 8.3%" in text
    assert "class" in text.split("top GPU activities by total time:", 1)[1].splitlines()[1]


# --- a name cut into the pieces the decoder reads (the glossary's reading) -------------------------


@pytest.mark.parametrize("row", TABLE, ids=lambda row: row["name"][:60])
def test_a_real_names_pieces_join_to_it_and_each_says_what_decode_read(row):
    name, found = row["name"], decode(row["name"], row["kind"])
    pieces = kernels.parts(name, row["kind"])
    assert "".join(p.text for p in pieces) == name
    assert all(p.field in ("", *kernels.PART_FIELDS) for p in pieces)
    read = {p.field: p.text for p in pieces if p.field}
    if found.library == UNKNOWN:
        assert read == {}
    if "layout" in read:
        assert read["layout"] == found.layout
    if "arch" in read:  # sm90, or CUTLASS's 80
        assert read["arch"].lower() in (found.arch, found.arch.removeprefix("sm"))
    if "tile" in read:
        assert read["tile"] in found.tile
    for piece in pieces:
        if piece.field in ("types", "dtype"):
            assert set(kernels.dtypes_of(piece.text)) <= set(found.dtypes)
        if piece.field == "tensor cores":
            assert found.tensor_cores is not None


def test_the_pieces_of_each_family_are_the_fields_its_name_spells():
    def marked(name):
        return [(p.text, p.field) for p in kernels.parts(name) if p.field]

    assert marked(GEMM) == [("nvjet", "family"), ("sm90", "arch"), ("256x128", "tile"),
                            ("bz_coopA", "detail"), ("NNT", "layout")]
    assert marked("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_"
                  "sgemm_128x256_8x4_nt_align1::Params)") == [
        ("cutlass", "family"), ("80", "arch"), ("simt", "tensor cores"), ("sgemm", "types"),
        ("128x256", "tile"), ("nt", "layout")]
    assert marked(ADD) == [("at::native", "family"), ("vectorized_elementwise_kernel", "operation"),
                           ("CUDAFunctor_add", "detail"), ("float", "dtype")]  # not the (int) argument
    assert marked(TRITON) == [("triton_poi", "family"), ("fused_add_0", "detail")]
    assert marked("Memcpy DtoH (Device -> Pageable)") == [("Memcpy", "family"), ("DtoH", "operation")]
    assert kernels.parts("my_kernel") == (kernels.NamePart("my_kernel"),) and kernels.parts("") == ()


def test_what_names_cut_short_share_is_common_and_the_rest_unsaid():
    bf16 = decode(ADD.replace("float", "c10::BFloat16"))
    shared = kernels.common([decode(ADD), bf16])
    assert shared == KernelName("ATen", "elementwise", MEMORY_BOUND_KERNELS, detail="CUDAFunctor_add")
    assert kernels.common([decode(ADD), decode(GEMM)]) == kernels.NOT_DECODED
    assert kernels.common([decode(GEMM)]) == decode(GEMM) and kernels.common([]) == kernels.NOT_DECODED

# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4", "triton>=3.0; sys_platform == 'linux'"]
# ///
"""Profile causal self-attention four ways with torch.profiler: naive, in place, SDPA and Triton.

    uv run snippets/04_attention.py --variant naive --warmup
    uv run snippets/04_attention.py --variant inplace --warmup
    uv run snippets/04_attention.py --variant sdpa --backend flash --warmup
    uv run snippets/04_attention.py --variant triton --warmup

The original series ran one script per variant; here one script takes --variant:
  naive    softmax(q @ k^T * scale, masked out of place with masked_fill) @ v
  inplace  the same with masked_fill_, which fills the scores where they lie
  sdpa     F.scaled_dot_product_attention(is_causal=True), with --backend math, efficient,
           flash or cudnn forcing one implementation (auto, the default, lets PyTorch choose)
  triton   our own flash-attention-style Triton kernel (forward, causal, bf16), in the role the
           downloaded hub kernel played in the original series; after profiling, its output is
           checked against SDPA's on the same inputs (the run fails if they differ beyond bf16's
           rounding) and the largest difference is printed and written under the table

Writes `{variant}[_{backend}]_b{batch}_h{heads}_s{seq}_d{head_dim}_{dtype}_{warm|cold}.json` (open
it in Perfetto) and `.txt` (the key_averages table) into --trace_dir, for example
`sdpa_flash_b8_h16_s1024_d64_bf16_warm.json`.

A backend that cannot run on this device, dtype or shape refuses on its first call. Then the run
writes neither file but `{stem}.unavailable`: one line, the reason taken from the error (and the
warnings PyTorch gives with it), and exits with status 0, so that the refusal is a result too. Our
Triton kernel refuses the same way without a CUDA GPU, without Triton, or outside what it is
written for (bf16, a head width that is a power of two from 16 to 128).
"""

import argparse
import contextlib
import functools
import re
import sys
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
BACKENDS = {
    "math": SDPBackend.MATH,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}
WAIT, WARMUP, ACTIVE = 1, 1, 3


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["naive", "inplace", "sdpa", "triton"], default="naive")
    parser.add_argument("--backend", choices=["auto", *BACKENDS], default="auto",
                        help="the SDPA implementation to force (--variant sdpa only)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, default=1024, help="tokens per sequence")
    parser.add_argument("--head_dim", type=int, default=64)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--warmup", action="store_true", help="three untimed steps before profiling")
    parser.add_argument("--steps", type=int, default=ACTIVE, help="profiled (active) steps, one call each")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/04_attention"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    args = parser.parse_args(argv)
    if args.backend != "auto" and args.variant != "sdpa":
        parser.error("--backend applies to --variant sdpa only")
    if args.steps < 1:
        parser.error("--steps must be positive")
    return args


def output_stem(args):
    name = f"sdpa_{args.backend}" if args.variant == "sdpa" else args.variant
    return (
        f"{name}_b{args.batch}_h{args.heads}_s{args.seq}_d{args.head_dim}_{args.dtype}_"
        f"{'warm' if args.warmup else 'cold'}"
    )


# --8<-- [start:naive]
def naive_attention(q, k, v, causal_mask):
    scale = q.shape[-1] ** -0.5
    scores = q @ k.transpose(-2, -1) * scale
    # Out of place: masked_fill copies the whole (batch, heads, seq, seq) score tensor first,
    # then fills the copy.
    scores = scores.masked_fill(causal_mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
# --8<-- [end:naive]


# --8<-- [start:inplace]
def inplace_attention(q, k, v, causal_mask):
    scale = q.shape[-1] ** -0.5
    scores = q @ k.transpose(-2, -1) * scale
    # In place: scores is ours alone (nothing else holds it, no autograd), so fill it where it is.
    scores.masked_fill_(causal_mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
# --8<-- [end:inplace]


# --8<-- [start:sdpa]
def sdpa_attention(q, k, v, causal_mask):
    # is_causal=True instead of attn_mask=causal_mask: the fused backends apply causality inside
    # the kernel (flash accepts no explicit mask at all), while the math backend builds the mask
    # again on every call, a (seq, seq) tensor of ones cut by tril, turned into -inf and 0.
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
# --8<-- [end:sdpa]


# --8<-- [start:triton]
BLOCK_M, BLOCK_N = 128, 64  # query rows per program, key columns per inner step


def triton_attention():
    """Causal attention forward as one Triton kernel launch, flash-attention style: each program
    keeps BLOCK_M query rows in registers and streams the keys and values past them in blocks of
    BLOCK_N, with an online softmax, so the (seq, seq) scores never reach memory. Triton is
    imported here, on first use, so that the other variants run where it is not installed."""
    import triton
    import triton.language as tl

    @triton.jit
    def causal_attention_kernel(
        q_ptr, k_ptr, v_ptr, out_ptr,
        stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
        stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
        heads, seq, qk_scale,
        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    ):
        # Program (m, bh): query rows m * BLOCK_M ... of head bh % heads of sequence bh // heads.
        # The last dimension is contiguous (checked by the caller): its stride is 1.
        start_m = tl.program_id(0)
        batch, head = tl.program_id(1) // heads, tl.program_id(1) % heads
        q_ptr += batch * stride_qb + head * stride_qh
        k_ptr += batch * stride_kb + head * stride_kh
        v_ptr += batch * stride_vb + head * stride_vh
        out_ptr += batch * stride_ob + head * stride_oh
        rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        dims = tl.arange(0, HEAD_DIM)
        row_ok = rows[:, None] < seq
        q = tl.load(q_ptr + rows[:, None] * stride_qs + dims[None, :], mask=row_ok, other=0.0)
        # Online softmax state per row, in fp32: the running maximum (in log2 units), the running
        # sum of exponentials, and the unnormalized output.
        row_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
        row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        # Causal: these rows see keys 0 .. their own index, so the loop stops after the block
        # holding the diagonal; blocks wholly above it are never loaded.
        end = tl.minimum((start_m + 1) * BLOCK_M, seq)
        for start_n in range(0, end, BLOCK_N):
            keys = start_n + cols
            key_ok = keys[None, :] < seq
            # K transposed as it is loaded: (HEAD_DIM, BLOCK_N), ready for q @ k^T.
            k = tl.load(k_ptr + keys[None, :] * stride_ks + dims[:, None], mask=key_ok, other=0.0)
            scores = tl.dot(q, k)  # bf16 in, fp32 accumulated
            # qk_scale holds 1/sqrt(d) * log2(e): exp2 below is then the softmax's exp. Masking
            # by element also covers the diagonal block and keys past the end of the sequence.
            visible = (rows[:, None] >= keys[None, :]) & key_ok
            scores = tl.where(visible, scores * qk_scale, float("-inf"))
            # Key 0 is visible to every row and sits in the first block, so new_max is finite
            # from the first step on: no -inf - -inf.
            new_max = tl.maximum(row_max, tl.max(scores, 1))
            p = tl.math.exp2(scores - new_max[:, None])
            correction = tl.math.exp2(row_max - new_max)
            row_sum = row_sum * correction + tl.sum(p, 1)
            v = tl.load(v_ptr + keys[:, None] * stride_vs + dims[None, :], mask=keys[:, None] < seq, other=0.0)
            # As flash attention does, the probabilities go into the second product in bf16.
            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
            row_max = new_max
        out = acc / row_sum[:, None]
        tl.store(out_ptr + rows[:, None] * stride_os + dims[None, :], out.to(out_ptr.dtype.element_ty), mask=row_ok)

    def attention(q, k, v, causal_mask=None):
        # causal_mask is unused: causality is applied inside the kernel, as SDPA's is_causal.
        batch, heads, seq, head_dim = q.shape
        assert q.shape == k.shape == v.shape and q.stride(-1) == k.stride(-1) == v.stride(-1) == 1
        out = torch.empty_like(q)
        grid = (triton.cdiv(seq, BLOCK_M), batch * heads)
        causal_attention_kernel[grid](
            q, k, v, out, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3],
            heads, seq, head_dim**-0.5 * 1.4426950408889634,  # log2(e)
            HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4, num_stages=3,
        )
        return out

    return attention
# --8<-- [end:triton]


def triton_unavailable(device, dtype, head_dim):
    """Why our Triton kernel cannot run here, or "" if it can. Asked before anything is profiled."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return f"our Triton attention kernel needs a CUDA GPU; this run is on {device.type}"
    if dtype != torch.bfloat16:
        return f"our Triton attention kernel is written for bf16, not {dtype}"
    if head_dim not in (16, 32, 64, 128):
        return f"our Triton attention kernel takes a head width of 16, 32, 64 or 128, not {head_dim}"
    try:
        import triton  # noqa: F401
    except ImportError as error:
        return f"Triton is not installed ({error})"
    return ""


def check_against_sdpa(attention, q, k, v):
    """Our kernel's output against SDPA's (is_causal=True) on the same inputs; the largest
    absolute difference. Both round to bf16 (8 bits of mantissa) and sum in a different order:
    outputs of magnitude up to a few differ by a few bf16 ulps, far below a wrong mask or index."""
    with torch.no_grad():
        ours = attention(q, k, v)
        reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours, reference, rtol=2e-2, atol=2e-2)
    return (ours.float() - reference.float()).abs().max().item()


VARIANTS = {"naive": naive_attention, "inplace": inplace_attention, "sdpa": sdpa_attention}


class BackendUnavailable(Exception):
    """The SDPA backend refused these inputs; the message says why, on one line."""


# PyTorch appends where in its C++ sources a warning was raised; the reader needs only the words.
WHERE_IN_PYTORCH = re.compile(r"\s*\(Triggered internally at [^)]*\)")


def refusal_reason(error, warning_messages):
    """The error and the warnings that explain it, on one line. Left out: the warnings about the
    backends that sdpa_kernel switched off (we did that), and a "... not used because:" that no
    reason follows."""
    parts = [str(error)]
    for message in warning_messages:
        text = " ".join(WHERE_IN_PYTORCH.sub("", message).split())
        if not text.endswith("has been runtime disabled."):
            parts.append(text)
    return " ".join(
        part for part, following in zip(parts, parts[1:] + [""])
        if not (part.endswith("because:") and (not following or following.endswith("because:")))
    )


def refusing_on_first_call(attention):
    """attention, where a RuntimeError from the very first call becomes BackendUnavailable.

    A backend that cannot run on this device, dtype or shape refuses at once, after a warning
    per reason; an error on a later call is a real error and is raised as it is.
    """
    called = False

    @functools.wraps(attention)
    def checked(*args):
        nonlocal called
        if called:
            return attention(*args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = attention(*args)
            except RuntimeError as error:
                reason = refusal_reason(error, [str(w.message) for w in caught])
                raise BackendUnavailable(reason) from error
        for w in caught:  # they were only held back in case of a refusal
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        called = True
        return out

    return checked


def run(args, stem):
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    torch.manual_seed(0)
    shape = (args.batch, args.heads, args.seq, args.head_dim)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype) for _ in range(3))
    # True above the diagonal: a query may not look at later keys. Built once, outside the step.
    causal_mask = torch.ones(args.seq, args.seq, device=device, dtype=torch.bool).triu(diagonal=1)
    if args.variant == "triton":
        reason = triton_unavailable(device, dtype, args.head_dim)
        if reason:
            raise BackendUnavailable(reason)
        attention = triton_attention()
    else:
        attention = VARIANTS[args.variant]
    if args.variant == "sdpa":
        attention = refusing_on_first_call(attention)
    if args.backend == "auto":
        sdpa_backend = contextlib.nullcontext
    else:
        sdpa_backend = functools.partial(sdpa_kernel, BACKENDS[args.backend])

    # --8<-- [start:step]
    def step():
        with record_function("attention"), sdpa_backend():
            return attention(q, k, v, causal_mask)
    # --8<-- [end:step]

    on_gpu = device.type == "cuda"
    if args.warmup:
        for _ in range(3):
            step()
        if on_gpu:
            torch.cuda.synchronize()

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    # --8<-- [start:profile]
    with profile(
        activities=activities,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1),
    ) as prof:
        for _ in range(WAIT + WARMUP + args.steps):
            step()
            prof.step()
    # --8<-- [end:profile]

    # Checked after profiling, so that a cold run profiles a cold kernel, and before writing, so
    # that a kernel that computes the wrong thing leaves no trace behind.
    checked = ""
    if args.variant == "triton":
        difference = check_against_sdpa(attention, q, k, v)
        checked = f"matches SDPA (is_causal=True, same inputs): max abs difference {difference:.3g}"

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    # What the .txt holds is what the run prints: the table, and our kernel's check under it.
    report = prof.key_averages().table(sort_by=sort_by, row_limit=15) + (f"\n{checked}" if checked else "")
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    (args.trace_dir / f"{stem}.txt").write_text(report + "\n")
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report)
    print(f"wrote {args.trace_dir / stem}.json and .txt")


def main(argv=None):
    args = parse_args(argv)
    stem = output_stem(args)
    try:
        run(args, stem)
    except BackendUnavailable as refusal:
        # Not a failure of the run: the refusal and its reason are what this example shows.
        args.trace_dir.mkdir(parents=True, exist_ok=True)
        (args.trace_dir / f"{stem}.unavailable").write_text(f"{refusal}\n")
        print(f"BACKEND UNAVAILABLE: {refusal}", file=sys.stderr)
        print(f"wrote {args.trace_dir / stem}.unavailable")


if __name__ == "__main__":
    main()

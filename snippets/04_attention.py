# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile causal self-attention three ways with torch.profiler: naive, in place, and SDPA.

    uv run snippets/04_attention.py --variant naive --warmup
    uv run snippets/04_attention.py --variant inplace --warmup
    uv run snippets/04_attention.py --variant sdpa --backend flash --warmup

The original series ran one script per variant; here one script takes --variant:
  naive    softmax(q @ k^T * scale, masked out of place with masked_fill) @ v
  inplace  the same with masked_fill_, which fills the scores where they lie
  sdpa     F.scaled_dot_product_attention(is_causal=True), with --backend math, efficient,
           flash or cudnn forcing one implementation (auto, the default, lets PyTorch choose)

Writes `{variant}[_{backend}]_b{batch}_h{heads}_s{seq}_d{head_dim}_{dtype}_{warm|cold}.json` (open
it in Perfetto) and `.txt` (the key_averages table) into --trace_dir, for example
`sdpa_flash_b8_h16_s1024_d64_bf16_warm.json`.

A backend that cannot run on this device, dtype or shape refuses on its first call. Then the run
writes neither file but `{stem}.unavailable`: one line, the reason taken from the error (and the
warnings PyTorch gives with it), and exits with status 0, so that the refusal is a result too.
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
    parser.add_argument("--variant", choices=["naive", "inplace", "sdpa"], default="naive")
    parser.add_argument("--backend", choices=["auto", *BACKENDS], default="auto",
                        help="the SDPA implementation to force (--variant sdpa only)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, default=1024, help="tokens per sequence")
    parser.add_argument("--head_dim", type=int, default=64)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--warmup", action="store_true", help="three untimed steps before profiling")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/04_attention"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    args = parser.parse_args(argv)
    if args.backend != "auto" and args.variant != "sdpa":
        parser.error("--backend applies to --variant sdpa only")
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
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            step()
            prof.step()
    # --8<-- [end:profile]

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=15)
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    (args.trace_dir / f"{stem}.txt").write_text(table + "\n")
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(table)
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

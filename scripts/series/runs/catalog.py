"""Every example the site shows: which snippet runs, with which arguments, under which name.

The tag is the name the snippet itself gives its outputs; the refresh checks that the two agree, so
the catalog and the snippets' naming cannot drift apart silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SNIPPETS = ROOT / "snippets"
TRACES = ROOT / "traces"

# Artifacts a snippet may write beside its trace and table, by kind: the suffix (after the tag) of
# the file the snippet writes, and of the sanitized file committed (scripts/series/runs/extras.py makes it).
EXTRAS = {
    "memory": (".memory.json", ".memory.json.gz"),  # memory timeline by category and a summary
    "snapshot": (".snapshot.pickle", ".snapshot.json.gz"),  # the CUDA caching allocator's record
    "ncu": (".ncu.json", ".ncu.json.gz"),  # Nsight Compute's measurement of one kernel, or why none
}


@dataclass(frozen=True)
class Example:
    snippet: str  # file stem under snippets/
    tag: str  # output stem the snippet writes: {tag}.json and {tag}.txt
    args: tuple[str, ...] = ()
    # Runs per refresh: the first gives the artifacts shown, every later one a per-step digest in
    # samples_path (scripts/series/runs/samples.py), for claims about noisy timings.
    repeats: int = 1
    extras: tuple[str, ...] = ()  # kinds of EXTRAS the snippet writes, each required
    # GPUs the run needs, one rank (process) each; with more than one the snippet writes one trace
    # and one table per rank ({tag}_rank{r}). A machine with fewer skips it (scripts/series/runs/freeze.py).
    gpus: int = 1
    # Whether the start of the process is part of what the example shows (its first steps, the
    # profiler's first session, a compile inside the recorded steps). A cold example's repeats are
    # fresh processes, each with its own CUDA context and an empty compile cache; a warm one's run
    # again in the process of its first run (already warm, as the example is about), sharing the
    # refresh's compile cache: see REPEATS below.
    cold: bool = False

    @property
    def repeats_in(self) -> str:
        """Where the runs after the first happen: "processes" (fresh) or "one process"."""
        return "processes" if self.cold or self.repeats == 1 else "one process"

    @property
    def key(self) -> str:
        return f"{self.snippet}/{self.tag}"

    @property
    def script(self) -> Path:
        return SNIPPETS / f"{self.snippet}.py"

    @property
    def folder(self) -> Path:
        return TRACES / self.snippet

    @property
    def stems(self) -> tuple[str, ...]:
        """The output stems the snippet writes: the tag, or one per rank on several GPUs."""
        return (self.tag,) if self.gpus == 1 else tuple(f"{self.tag}_rank{r}" for r in range(self.gpus))

    @property
    def trace_paths(self) -> tuple[Path, ...]:
        return tuple(self.folder / f"{stem}.json.gz" for stem in self.stems)

    @property
    def table_paths(self) -> tuple[Path, ...]:
        return tuple(self.folder / f"{stem}.txt" for stem in self.stems)

    @property
    def trace_path(self) -> Path:
        return self.folder / f"{self.tag}.json.gz"

    @property
    def table_path(self) -> Path:
        return self.folder / f"{self.tag}.txt"

    @property
    def meta_path(self) -> Path:
        return self.folder / f"{self.tag}.meta.json"

    @property
    def samples_path(self) -> Path:
        """The digests of the runs after the first, when repeats > 1."""
        return self.folder / f"{self.tag}.samples.json"

    @property
    def extra_paths(self) -> dict[str, Path]:
        """The committed extra artifacts, by kind."""
        return {kind: self.folder / f"{self.tag}{EXTRAS[kind][1]}" for kind in self.extras}

    @property
    def unavailable_path(self) -> Path:
        """Written instead of trace and table when the snippet reports it cannot run here
        (e.g. an attention backend this GPU or dtype lacks): one line, the reason."""
        return self.folder / f"{self.tag}.unavailable"

    @property
    def command(self) -> str:
        """How a reader reproduces this run."""
        return " ".join(["uv run", f"snippets/{self.snippet}.py", *self.args])


# Repeated runs for the examples whose claims compare timings at the microsecond scale (issue 10):
# one sample per example decided a cold/warm claim that flipped between two refreshes of one
# commit. Where the start of a process is the subject (cold examples: Part 1's cold runs and the
# Activity Buffer Request, Part 2's cold Linear), each run is a fresh process. A warm example is
# about the steady state after its own warm-up: its repeats run the snippet again in the process
# of its first run (a new profiler session, the same warm-up first), which is what "warm" means,
# at a fraction of a process's cost (each forked run still starts CUDA, cuBLAS and CUPTI: 4 s on
# our H200). Comparisons of steady-state GPU work (Part 3's SDPA backends, the sweep's modes) are
# repeated by their recorded steps in one run. So is Part 4: its claims compare decode steps of
# milliseconds (eager against the static cache against the CUDA graph, cuDNN's first call of a
# step against its others, tokens per second across batch sizes), each after its own warm-up
# tokens, RECORDED_STEPS per batch size (one more at batch 1, whose first step the comparisons leave
# out); no claim there is about a process's start, and a process repeat would add 3 to 43 s per
# example for samples the steps already give.
# A comparison needs MIN_SAMPLES (10) samples a side (scripts/series/pages/claims.py): the runs
# below give each comparison of the pages at least that many, by repeats (examples whose samples
# are their steps across runs) or by recorded steps (those read from the shown trace alone). Three
# runs for the examples no comparison reads by the step (the cold start's two schedules); five
# runs made the refresh of Part 1 alone take 330 s on an H200, so the runs go up only where a
# comparison needs them.
REPEATS = 3
STEP_REPEATS = 4  # 3 recorded steps a run: 12 samples of a per-step quantity
FIRST_STEP_REPEATS = 10  # one first recorded step a run: 10 first steps
RECORDED_STEPS = 10  # for the examples whose comparisons read one trace: 10 calls or steps a side


def _matmul_add(size: int, *, warm: bool = False, compiled: bool = False, dtype: str = "bf16",
                batch: int = 0, tf32: bool = False, schedule: str = "", repeats: int = 1) -> Example:
    args = ["--size", str(size)]
    tag = f"{size}_{dtype}_{'warm' if warm else 'cold'}_{'compile' if compiled else 'eager'}"
    if dtype != "bf16":
        args += ["--dtype", dtype]
    if compiled:
        args.append("--compile")
    if warm:
        args.append("--warmup")
    if batch:
        args += ["--batch", str(batch)]
        tag += f"_b{batch}"
    if tf32:
        args.append("--tf32")
        tag += "_tf32"
    if schedule:
        args += ["--schedule", schedule]
        tag += "_s" + schedule.replace(",", "-")
    return Example("01_matmul_add", tag, tuple(args), repeats, cold=not warm)


PART1 = (
    # Cold and warm, at the size where the host sets the pace and where the GPU does. Repeated:
    # the steps' lengths and the time to aten::matmul, cold against warm; the cold 64's first
    # recorded step against its later ones, one first step per process.
    *(_matmul_add(size, warm=warm, repeats=FIRST_STEP_REPEATS if (size, warm) == (64, False) else STEP_REPEATS)
      for size in (64, 4096) for warm in (False, True)),
    # torch.compile, warm: at 64 against warm eager (is a compiled step cheaper on the host?), at
    # 4096 for what it does to the kernels (one addmm, a bias copy and a `badd` GEMM). Repeated:
    # the host time per step, compiled against eager.
    _matmul_add(64, warm=True, compiled=True, repeats=STEP_REPEATS),
    _matmul_add(4096, warm=True, compiled=True, repeats=STEP_REPEATS),
    # The Activity Buffer Request finding: no wait/warmup, then a long active window. Repeated:
    # the first step's cold start, and the buffer request's share of two runs.
    _matmul_add(64, schedule="0,0,3", repeats=REPEATS),
    _matmul_add(64, schedule="0,0,20", repeats=REPEATS),
    # A batch dimension turns aten::mm into aten::bmm.
    _matmul_add(64, batch=8),
    # fp32 at the large size: a different GEMM kernel family, on CUDA cores; and the same with TF32
    # allowed (torch.backends.cuda.matmul.allow_tf32), back on tensor cores.
    _matmul_add(4096, warm=True, dtype="fp32"),
    _matmul_add(4096, warm=True, dtype="fp32", tf32=True),
)


def _linear(*, warm: bool, compiled: bool) -> Example:
    args = ["--batch", "1024", "--in_dim", "32", "--out_dim", "64"]
    args += ["--compile"] * compiled + ["--warmup"] * warm
    tag = f"linear_b1024_32x64_bf16_{'warm' if warm else 'cold'}_{'compile' if compiled else 'eager'}"
    # Repeated: the four runs' steps side by side (is the first recorded step the longest, with
    # --warmup or without? the eager runs' first steps pooled: five a run), the warm compiled GEMM
    # against the warm eager one (three steps a run), and the steps after the first, compiled
    # against eager (two a run, cold and warm pooled).
    repeats = 5 if not compiled else STEP_REPEATS if warm else REPEATS
    return Example("02_linear", tag, tuple(args), repeats, cold=not warm)


def _mlp(snippet: str, impl: str, *extra: str) -> Example:
    # impl ("eager", "compile", "triton") is the last part of the tag the snippet writes.
    args = ("--batch", "64", "--seq", "128", "--dim", "768", "--hidden", "3072", "--warmup", *extra,
            "--steps", str(RECORDED_STEPS))  # the three variants compared step by step, from their traces
    return Example(snippet, f"mlp_b64_s128_768x3072_bf16_warm_{impl}", args)


PART2 = tuple(
    [_linear(warm=warm, compiled=compiled) for warm in (False, True) for compiled in (False, True)]
    + [
        # The GeGLU MLP: eager (five kernels), Inductor (three GEMMs and one fused Triton kernel),
        # and our hand-written Triton GELU-and-multiply between the eager cuBLAS GEMMs.
        _mlp("03_simple_mlp", "eager"),
        _mlp("03_simple_mlp", "compile", "--compile"),
        _mlp("03_kernels_mlp", "triton"),
    ]
)


def _attention(variant: str, backend: str = "", dtype: str = "bf16") -> Example:
    args = ["--variant", variant] + (["--backend", backend] if backend else [])
    args += ["--batch", "8", "--heads", "16", "--seq", "1024", "--head_dim", "64", "--warmup"]
    if dtype != "bf16":
        args += ["--dtype", dtype]  # the refusals: nothing to compare
    else:
        args += ["--steps", str(RECORDED_STEPS)]  # one call per step: the calls are the samples
    name = f"{variant}_{backend}" if backend else variant
    return Example("04_attention", f"{name}_b8_h16_s1024_d64_{dtype}_warm", tuple(args))


# Attention: the out-of-place masked_fill (a hidden copy), its in-place twin, and SDPA with each
# backend forced in turn.
PART3 = (
    _attention("naive"),
    _attention("inplace"),
    *(_attention("sdpa", backend) for backend in ("math", "efficient", "flash", "cudnn")),
    # In fp32 the fused backends that need half precision refuse: their rows keep the reason.
    *(_attention("sdpa", backend, dtype="fp32") for backend in ("flash", "cudnn")),
)


# The sweep page: Part 1's function over sizes 16..8192, eager everywhere, compiled and as a CUDA
# graph at the small end, with the GPU's peak measured in the same run.
SWEEP = (Example("01_matmul_add_sweep", "sweep_bf16_16-8192"),)


def _llm(phase: str, batches: tuple[int, ...] = (1,), prompt: int = 512, *, static: bool = False,
         compiled: bool = False, tokens: int = 0, attention: str = "") -> Example:
    args = ["--phase", phase, "--batch", ",".join(map(str, batches)), "--prompt", str(prompt)]
    args += ["--cache", "static"] * static + ["--compile"] * compiled
    args += ["--tokens", str(tokens)] if tokens else []
    args += ["--attention", attention] if attention else []
    tag = (f"{phase}_b{'-'.join(map(str, batches))}_p{prompt}_{'static' if static else 'dynamic'}_"
           f"{'compile' if compiled else 'eager'}" + (f"_sdpa-{attention}" if attention else ""))
    return Example("05_llm_inference", tag, tuple(args))


# LLM inference: prefill, then decode at batch 1 as transformers runs it (overhead-bound), with
# flash attention forced instead of the cuDNN attention SDPA picks (which rebuilds its graph for
# every new key length), with a static cache alone, and with the static cache compiled into CUDA
# graphs; then tokens per second against batch size, each sweep in one trace.
BATCH_SWEEP = (1, 8, 64, 256, 1024, 2048)
STEADY_TOKENS = RECORDED_STEPS + 1  # the comparisons at batch 1 read the steps after the first
PART4 = (
    _llm("prefill", tokens=STEADY_TOKENS),
    _llm("decode", tokens=STEADY_TOKENS),
    _llm("decode", attention="flash", tokens=STEADY_TOKENS),
    _llm("decode", static=True, tokens=STEADY_TOKENS),
    _llm("decode", static=True, compiled=True, tokens=STEADY_TOKENS),
    _llm("decode", BATCH_SWEEP, 128, tokens=RECORDED_STEPS),
    _llm("decode", BATCH_SWEEP, 128, tokens=RECORDED_STEPS, attention="flash"),
    _llm("decode", BATCH_SWEEP, 128, static=True, compiled=True, tokens=RECORDED_STEPS),
)


# The guide's worked example, and a large trace (200k+ events with Python stacks) for the
# analyzer's benchmark.
GUIDE = (
    Example("train_step", "train_b16_s3"),
    Example("train_step", "train_b16_s10_stack", ("--with_stack", "--steps", "10")),
)



def _memory(variant: str) -> Example:
    args = ("--variant", variant, "--batch", "16", "--seq", "512", "--layers", "8", "--d_model", "512")
    # Repeated: the step time that checkpointing's recomputation costs, against the baseline's (two
    # recorded steps a run: five runs give ten).
    return Example("06_memory", f"train_b16_s512_l8_d512_fp32_{variant}", args, 5, ("memory", "snapshot"))


# Part 5's memory: a training step whose peak is mostly the activations saved for backward, and the
# same step with each block checkpointed, with the memory timeline and the allocator's record.
PART5_MEMORY = (_memory("baseline"), _memory("checkpoint"))


# Part 5: shapes (one Linear at four sequence lengths, grouped by input shape; RECORDED_STEPS
# recorded steps, so that each length's calls are enough to compare), stacks (the guide's step with Python stacks, the
# optimizer per parameter or fused, and what stacks cost: 30 timed steps per configuration in the
# same run), and the roofline (the roofs and each kernel's calls, repeated inside the run).
PART5 = PART5_MEMORY + (
    Example("07_shapes_stacks", "shapes_b16_s64-256-1024-4096_1024x4096_bf16",
            ("--mode", "shapes", "--steps", str(RECORDED_STEPS))),
    *(Example("07_shapes_stacks", f"stacks_b16_s3_{optimizer}", ("--mode", "stacks", "--optimizer", optimizer))
      for optimizer in ("foreach_false", "fused")),
    Example("08_roofline", "roofline_bf16_t8192_d4096_h14336"),
    # Part 3's missing variant, the series' hub kernel's role: our own Triton attention kernel,
    # checked against SDPA in the run, shown in Part 5 against Part 3's fused backends.
    _attention("triton"),
)


def _ddp(bucket_mb: int, straggler: int = -1) -> Example:
    args = ["--world_size", "2", "--bucket_cap_mb", str(bucket_mb)]
    args += ["--straggler", str(straggler)] if straggler >= 0 else []
    tag = f"ddp_w2_bucket{bucket_mb}" + (f"_straggler{straggler}" if straggler >= 0 else "")
    return Example("09_ddp", tag, tuple(args), gpus=2)


# Part 6: a DDP step on two GPUs, one trace per rank. DDP's default 25 MB buckets, then small ones
# (many all-reduces, started early) and large ones (few, started late: less overlap), and rank 1
# made late by 20 ms of host work a step, which rank 0's timeline shows as waiting in NCCL.
PART6 = (_ddp(25), _ddp(1), _ddp(200), _ddp(25, straggler=1))

# The training step post (docs/blog/posts/training-step.md): one step read in order with AdamW's
# three implementations; a loop that reads a value back every step, three ways, against one that
# does not; a DataLoader with and without workers and pinned memory; a copy on a side stream
# against the same copy on the compute stream; and the step's top kernel handed to Nsight Compute.
# Their claims compare recorded steps within a run (three to five each): no process repeats.
def _sync(sync: str) -> Example:
    return Example("11_host_sync", f"sync_{sync}_b1024_h4096_l6", ("--sync", sync))


def _data(workers: int, pinned: bool = False) -> Example:
    return Example("12_data_loading", f"data_w{workers}_b64" + "_pinned" * pinned,
                   ("--workers", str(workers), *("--pin_memory",) * pinned))


TRAINING = (
    *(Example("10_train_phases", f"train_b16_s256_l6_d512_{optimizer}", ("--optimizer", optimizer))
      for optimizer in ("foreach_false", "foreach", "fused")),
    *(_sync(sync) for sync in ("none", "item", "print", "cpu")),
    _data(0), _data(4), _data(4, pinned=True),
    *(Example("13_streams", f"streams_{copy}_r8192_d4096_m4", ("--copy", copy)) for copy in ("same", "side")),
    Example("14_ncu_top_kernel", "ncu_b16_s256_l6_d512", extras=("ncu",)),
)

# The guide's common mistakes (docs/guide/common-mistakes.md), where no run of the series shows one:
# a profile without prof.step(), and GPU work timed without torch.cuda.synchronize().
MISTAKES = tuple(Example("15_mistakes", f"mistake_{mistake}_n8192", ("--mistake", mistake))
                 for mistake in ("no_step", "no_sync"))

EXAMPLES: tuple[Example, ...] = PART1 + SWEEP + PART2 + PART3 + PART4 + GUIDE + PART5 + TRAINING + MISTAKES + PART6

# Examples a refresh runs when named (`make refresh ONLY=...`) but that no page shows yet: the build
# neither checks their artifacts nor asks for them to be shown. The post that shows one moves it
# into EXAMPLES.
PENDING: tuple[Example, ...] = ()

# The refresh's report splits its time by these.
PHASES = {"Part 1": PART1, "sweep": SWEEP, "Part 2": PART2, "Part 3": PART3, "Part 4": PART4, "guide": GUIDE,
          "Part 5": PART5, "Part 6": PART6, "training": TRAINING, "mistakes": MISTAKES}


def phase_of(example: Example) -> str:
    """The part of the series an example belongs to (its snippet's name if in none)."""
    return next((name for name, examples in PHASES.items() if example in examples), example.snippet)


_BY_KEY = {example.key: example for example in EXAMPLES + PENDING}


def get(key: str) -> Example:
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"no example {key!r} in scripts/series/runs/catalog.py") from None


def select(patterns: list[str] | None) -> list[Example]:
    """Examples whose key equals or starts with one of the patterns, pending ones included (all
    shown examples when none given)."""
    if not patterns:
        return list(EXAMPLES)
    known = EXAMPLES + PENDING
    chosen = [e for e in known if any(e.key == p or e.key.startswith(p.rstrip("/") + "/") for p in patterns)]
    unknown = [p for p in patterns if not any(e.key == p or e.key.startswith(p.rstrip("/") + "/") for e in known)]
    if unknown:
        raise KeyError(f"no example matches {', '.join(unknown)} (see scripts/series/runs/catalog.py)")
    return chosen

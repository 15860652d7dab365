"""The companion notebooks' contents: one entry per part, each a list of markdown cells and
examples to run (scripts/series/notebooks/write.py builds, checks and publishes them from these).

Standard library only, like scripts/series/notebooks/write.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..runs import catalog
from ..runs.catalog import ROOT, Example

NOTEBOOKS_DIR = ROOT / "docs" / "notebooks"


@dataclass(frozen=True)
class Run:
    """An example of scripts/series/runs/catalog.py, run by its snippet, and what to look for in its output."""

    key: str
    look_for: str  # one or two sentences of markdown; no numbers: those live in the outputs


@dataclass(frozen=True)
class Notebook:
    part: int | None  # None: a post of the series outside its numbered parts
    slug: str  # the post's slug: the post is blog/<slug>/, the notebook part-<part>-<slug>.ipynb (<slug>.ipynb)
    title: str
    intro: str  # markdown, after the title
    cells: tuple[str | Run, ...]  # markdown text, or an example to run
    label: str = ""  # how links name the post: "Part <part>" by default
    group: str = ""  # the tuple of scripts/series/runs/catalog.py whose examples it runs: PART<part> by default

    @property
    def name(self) -> str:
        return f"part-{self.part}-{self.slug}" if self.part is not None else self.slug

    @property
    def post_label(self) -> str:
        return self.label or f"Part {self.part}"

    @property
    def catalog_group(self) -> str:
        return self.group or f"PART{self.part}"

    @property
    def path(self) -> Path:
        return NOTEBOOKS_DIR / f"{self.name}.ipynb"

    @property
    def docs_path(self) -> str:
        """The notebook as mkdocs names it, relative to docs/."""
        return f"notebooks/{self.name}.ipynb"

    @property
    def page_url(self) -> str:
        """Site-relative URL of the rendered notebook."""
        return f"notebooks/{self.name}/"

    @property
    def download_url(self) -> str:
        """Site-relative URL of the downloadable copy (mkdocs-jupyter's include_source)."""
        return f"{self.page_url}{self.name}.ipynb"

    @property
    def post_url(self) -> str:
        return f"blog/{self.slug}/"

    @property
    def runs(self) -> list[Run]:
        return [cell for cell in self.cells if isinstance(cell, Run)]

    @property
    def examples(self) -> list[Example]:
        return [catalog.get(run.key) for run in self.runs]

    @property
    def snippets(self) -> list[str]:
        """The snippet files its cells run, in order of first use."""
        return list(dict.fromkeys(example.script.name for example in self.examples))



# --- the notebooks ------------------------------------------------------------------------------

P1 = "01_matmul_add/"
P2_MLP = "mlp_b64_s128_768x3072_bf16_warm"
P3 = "b8_h16_s1024_d64"
P4 = "05_llm_inference"

NOTEBOOKS: tuple[Notebook, ...] = (
    Notebook(
        part=1,
        slug="matmul-add",
        title="Part 1 notebook: x @ w + b",
        intro=(
            "Every example of Part 1, the profile of `torch.add(torch.matmul(x, w), b)` at two sizes, "
            "cold and warm, eager and compiled, with the profiler's schedule, a batch dimension and "
            "the data type varied one at a time."
        ),
        cells=(
            "## 64×64: how busy is the GPU?",
            Run(P1 + "64_bf16_cold_eager",
                "Read the two totals at the foot of the table first: how does the CPU's compare with the "
                "GPU's (a ratio, not how busy the GPU was)? The post reads them for its run and gives the "
                "analyzer's GPU busy share and verdict. `matmul_add` has "
                "two rows: the CPU label, and its span on the GPU lane, which counts the idle time between "
                "its kernels."),
            "## 4096×4096: does the GPU become the bottleneck?",
            Run(P1 + "4096_bf16_cold_eager",
                "Compare the two totals with the 64×64 run's, and find the GEMM kernel's share of the CUDA "
                "time (its name depends on the GPU). The post says, from its runs, what the analyzer calls "
                "this program."),
            "## Warm runs",
            Run(P1 + "64_bf16_warm_eager",
                "`--warmup` runs three untimed steps before the profiler starts. Compare this table "
                "and its trace with the cold one: do the recorded steps reach `aten::matmul` sooner? The "
                "post compares them step by step and says which way it went on its GPU."),
            Run(P1 + "4096_bf16_warm_eager",
                "The GEMM row averages three calls. Open the trace to see each one and compare their "
                "durations from step to step."),
            "## The cold start and the profiler's own bookkeeping",
            Run(P1 + "64_bf16_cold_eager_s0-0-3",
                "`--schedule 0,0,3` records from the very first step, so the cold start is in the "
                "table: module loading rows (`Lazy Function Loading`, `Runtime Triggered Module "
                "Loading`) and the profiler's `Activity Buffer Request`."),
            Run(P1 + "64_bf16_cold_eager_s0-0-20",
                "Twenty recorded steps instead of three: `Activity Buffer Request` still happens "
                "once. Compare its share of the Self CPU time with the three-step run's: does a longer "
                "window dilute it, or does the cold start inside the first `aten::mm` dominate both?"),
            "## A batch dimension",
            Run(P1 + "64_bf16_cold_eager_b8",
                "With `--batch 8` the inputs are 3-D: which op does `aten::matmul` dispatch to here, "
                "where the 2-D runs call `aten::mm`?"),
            "## fp32",
            Run(P1 + "4096_fp32_warm_eager",
                "The same product in fp32: compare its GEMM kernel's name and its CUDA time with the "
                "bf16 warm run above."),
            Run(P1 + "4096_fp32_warm_eager_tf32",
                "fp32 again, with `--tf32` (`torch.backends.cuda.matmul.allow_tf32 = True`): which GEMM "
                "kernel runs now, and how does its CUDA time compare with the fp32 run above?"),
            "## torch.compile",
            Run(P1 + "64_bf16_warm_compile",
                "Look for the compiler runtime's rows (`Torch-Compiled Region`, `TorchDynamo Cache "
                "Lookup`, `## Call CompiledFxGraph …`) and for what became of the matmul and the add. "
                "Whether compiling pays the host back at this size, the sweep below answers from many "
                "steps of each mode."),
            Run(P1 + "4096_bf16_warm_compile",
                "Count the GPU activities per step under the compiled op and read their names: did the "
                "compiler change the kernels, or only the rows above them? The post reads them for its "
                "run. To compare it with the warm eager run fact by fact, run "
                "`python scripts/analyze.py BEFORE AFTER --diff` on the two traces in a checkout of the "
                "repository."),
            "## Beyond Part 1: every size at once",
            Run("01_matmul_add_sweep/sweep_bf16_16-8192",
                "One run over every size from 16 to 8192: eager everywhere, compiled and as a CUDA "
                "graph at the small end, after a measured peak. The lines under the table give each "
                "block's host time, wall time and share of the peak; the sweep's page reads the "
                "same blocks from the trace and finds where the GPU starts to outlast the host. The "
                "profiler's own table puts every block's `aten::mm` calls in one row, whatever their "
                "size: the reason to read the blocks from the trace."),
        ),
    ),
    Notebook(
        part=2,
        slug="linear-mlp",
        title="Part 2 notebook: nn.Linear and a fused MLP",
        intro=(
            "Every example of Part 2: one `nn.Linear` cold and warm, eager and compiled, then a GeGLU "
            "MLP in eager mode, compiled by Inductor, and with the Triton kernel the post writes. The "
            "post tells one story from these runs; the cells below also hold what it leaves to you: "
            "the step-by-step lengths of the cold and warm runs, the rest of the kernel names, and the "
            "launch details that test their reading."
        ),
        cells=(
            "## One nn.Linear layer",
            Run("02_linear/linear_b1024_32x64_bf16_cold_eager",
                "Follow `aten::linear` down to its children (`aten::t` is a view: CPU time, no kernel) "
                "and to the GEMM kernel they run; the post reads what the kernel's name says about the "
                "bias."),
            Run("02_linear/linear_b1024_32x64_bf16_cold_compile",
                "Compiled: compare with the eager table. Which rows are gone, which of the compiler's "
                "appear, and is the GEMM kernel the same one?"),
            Run("02_linear/linear_b1024_32x64_bf16_warm_eager",
                "The warm eager run: compare its rows with the cold one's, then open both traces and "
                "read each recorded step's length. Is the first recorded step the longest, with "
                "`--warmup` or without? If it is in every run, three untimed calls do not remove that "
                "cost, and part of it belongs to the profiler's first active step."),
            Run("02_linear/linear_b1024_32x64_bf16_warm_compile",
                "The warm compiled run: compare its CPU total with the warm eager run to see what the "
                "compiler's runtime costs on a layer this small, and the GEMM kernel's time per call "
                "with eager mode's."),
            "## Reading kernel names\n\n"
            "cuBLAS's nvjet kernels (on Hopper and later) pack their configuration into the name; NVIDIA "
            "does not document it, so what follows is a reading to test, not a specification. Split at "
            "the underscores: the family, the architecture (`sm90`), the types (`tst`: bf16 in, fp32 "
            "accumulation, bf16 out), the output tile, the K-tile and the pipeline stages, the cluster "
            "shape, a letter we cannot read, the epilogue (`bz` for beta zero, `bias`, or a schedule such "
            "as `coopA` and `coopB`) and the layout (`T`: the weight read transposed).\n\n"
            "The trace lets you test the middle fields. Each kernel event's `args` record its `grid`, "
            "its `block` and its `shared memory`. If `AxB_KxS` means an A×B output tile built from S "
            "buffered slices K wide, the stage buffers take S × (A + B) × K × 2 bytes of bf16, a little "
            "less than the shared memory the kernel asks for; and a persistent kernel launches one block "
            "per tile or per SM, whichever is fewer. Try it on the MLP's GEMMs below, whose tiles "
            "outnumber the SMs, and on the linear layer's, whose tiles do not. Part 1's fp32 GEMM, which "
            "runs an older kernel, spells the same fields out (`tilesize`, `stage`, `warpsize`).\n\n"
            "Inductor's kernels are named `triton_` + the first three letters of their kind (`poi` "
            "pointwise, `red` reduction, `per` persistent reduction, `tem` template) + `fused_` and the "
            "ATen ops they fuse + a running number. A Triton kernel written by hand keeps its Python "
            "function's name.",
            "## A GeGLU MLP, three ways",
            Run(f"03_simple_mlp/{P2_MLP}_eager",
                "Eager mode: the MLP's three matrix products (`aten::mm`) and its GELU and multiply, "
                "each with its own kernels; look for what else `aten::mm` puts on the GPU."),
            Run(f"03_simple_mlp/{P2_MLP}_compile",
                "Compiled by Inductor: which kernels run the GEMMs, and what replaced GELU and multiply? "
                "A generated kernel (`triton_…`) appears twice, as the CPU call that launches it and as "
                "the GPU kernel. In the trace, compare the call that launches it with the one that "
                "launches ATen's kernels in eager mode."),
            Run(f"03_kernels_mlp/{P2_MLP}_triton",
                "Our hand-written Triton kernel, `gelu_tanh_mul_kernel`, under its own `gelu_mul` "
                "label; compare its CUDA time with Inductor's fused kernel above, and its grid and block "
                "(in the kernel event's `args`) with Inductor's. (Run on a GPU, the snippet also prints "
                "how far its output is from the eager MLP's before the table.)"),
            "To read the three variants side by side, run `python scripts/analyze.py` on each trace: "
            "the facts give each the same measures (GPU busy, the GPU waiting for the CPU, stalled, the "
            "launch delay and the verdict), and HTA's idle-time breakdown, which counts only the gaps "
            "between kernels, so its share of idle time the CPU caused is of a different whole.",
        ),
    ),
    Notebook(
        part=3,
        slug="attention",
        title="Part 3 notebook: attention, naive to fused",
        intro=(
            "Every example of Part 3: causal self-attention written naively, with an in-place mask, "
            "and through `scaled_dot_product_attention` with each backend forced in turn, plus the two "
            "backends that refuse fp32 inputs. The post keeps to one story; what it leaves out is here: "
            "the math backend kernel by kernel, the refusals word for word, and what the trace's "
            "occupancy estimate means. (Our own Triton attention kernel is in Part 5's notebook.)"
        ),
        cells=(
            "## Naive and in place",
            Run(f"04_attention/naive_{P3}_bf16_warm",
                "Look for rows you did not write, `aten::clone` and `aten::copy_`: the out-of-place "
                "`masked_fill` copies the whole score matrix first. Find that copy on the GPU rows."),
            Run(f"04_attention/inplace_{P3}_bf16_warm",
                "`masked_fill_` fills the scores where they are: compare with the naive table, and look "
                "for `aten::clone`, `aten::copy_` and the copy."),
            "## SDPA, one backend at a time",
            "The math backend is `scaled_dot_product_attention` written in ATen ops, for inputs no fused "
            "kernel accepts. Read its rows in order. The inputs go to fp32 first: an `aten::to` for each of q, k and v, "
            "whose kernel casts bf16 to fp32 (PyTorch does this on purpose, for accuracy, unless "
            "`torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)` allows bf16). So both GEMMs run "
            "in fp32: `f32f32` in their names gives the types, `ffma` says they run on the ordinary CUDA "
            "cores, and `sm80` the architecture the kernel was built for. The causal mask is built again on "
            "every call: `aten::ones`, `aten::tril`, `aten::where`, then `aten::add_` applies it. The softmax "
            "is a safe one (`aten::_safe_softmax`: rows masked out entirely become zeros, not NaN), and "
            "an `aten::to` converts the attention weights back to bf16 before the second product.",
            Run(f"04_attention/sdpa_math_{P3}_bf16_warm",
                "The math backend in ATen ops: read the GEMM kernels' names for their precision, and "
                "look for the softmax and for the causal mask built again on every call "
                "(`aten::ones`, `aten::tril`, `aten::where`)."),
            Run(f"04_attention/sdpa_efficient_{P3}_bf16_warm",
                "The memory-efficient backend: how many kernels per call now, in place of the scores, "
                "mask and softmax kernels?"),
            Run(f"04_attention/sdpa_flash_{P3}_bf16_warm",
                "Flash attention: again one kernel per call; compare its CUDA time and the CPU time "
                "around it with the efficient backend."),
            Run(f"04_attention/sdpa_cudnn_{P3}_bf16_warm",
                "cuDNN's fused attention: find its kernel (`cudnn_generated_…`), the launch call that "
                "starts it, and what else each call puts on the GPU."),
            "### What the occupancy estimate estimates",
            "Each kernel in the trace carries `est. achieved occupancy %`. It is not measured: Kineto "
            "computes it when it writes the trace, with CUDA's occupancy calculator, from the launch's "
            "shape and the kernel's registers and shared memory: the blocks per SM that fit, capped by the "
            "blocks per SM the grid has, times the threads per block, over the SM's maximum of threads. "
            "Fused attention kernels read low by design: each thread keeps part of a tile of scores in "
            "registers, and fewer, fatter threads are the price. A kernel that opts in to more shared "
            "memory than the default (nvjet GEMMs, cuDNN's attention) reads 0, because Kineto's call passes "
            "no opt-in limit; so does a kernel of a single block, truly near zero. For a measured occupancy, "
            "use Nsight Compute.",
            "## When a backend refuses",
            Run(f"04_attention/sdpa_flash_{P3}_fp32_warm",
                "Flash attention takes half-precision inputs only: in fp32 it refuses on the first "
                "call, and the snippet prints the reason PyTorch gave instead of a table."),
            Run(f"04_attention/sdpa_cudnn_{P3}_fp32_warm",
                "cuDNN attention refuses fp32 inputs too; the refusal is a result, and the snippet "
                "writes its reason where the trace would be."),
        ),
    ),
    Notebook(
        part=4,
        slug="llm-inference",
        title="Part 4 notebook: LLM inference with transformers",
        intro=(
            "Every example of Part 4: a Llama-style model built from a `transformers` config with "
            "random weights (nothing to download), its prefill, its decode as `transformers` runs it, "
            "with flash attention forced, with a static KV cache, and compiled into CUDA graphs; then "
            "tokens per second against batch size. It needs `transformers` besides `torch` "
            "(`pip install transformers`)."
        ),
        cells=(
            "## Prefill and decode",
            "Why random weights change nothing a profiler sees: a dense model runs the same operators on "
            "tensors of the same shapes whatever numbers they hold, the GEMMs take about the same time on "
            "random values as on trained ones (all-zero weights could run faster, which is why they are "
            "random rather than empty), and decoding a fixed number of tokens means no early stop makes one "
            "run shorter than another. The snippet's flags set every dimension of the model.",
            Run(f"{P4}/prefill_b1_p512_dynamic_eager",
                "One forward pass over the whole prompt per step: compare the GPU's share of the time "
                "with the decode runs below. The post profiles one prompt length for one sequence; the "
                "snippet's `--prompt` and `--batch` run longer prompts and larger prefill batches."),
            Run(f"{P4}/decode_b1_p512_dynamic_eager",
                "One token per step. Find the row with the largest `Self CPU %`, then open the trace "
                "and compare the attention calls of one step with each other; the post does it for its "
                "run and tests its reading of what it finds."),
            "## Testing a reading: flash attention",
            "The post's reading of the eager decode: cuDNN runs attention as a graph built and tuned for "
            "one set of shapes, and with a dynamic cache the keys and values grow by one position per "
            "token, so every token brings a new shape. The first layer of a step pays for a new graph and "
            "the other layers, which see the same shape, reuse it. MLX's notes on its cuDNN backend say the "
            "same: the graph is recreated whenever the sequence length increases "
            "(https://github.com/ml-explore/mlx/pull/2743). A reading is a hypothesis, and the snippet can "
            "test it: `--attention flash` forces PyTorch's flash attention, which has no graph to build, "
            "and changes nothing else.",
            Run(f"{P4}/decode_b1_p512_dynamic_eager_sdpa-flash",
                "Compare the attention calls, the widest GPU gap of a step and the time per token with the "
                "run above. What is left is the plain cost of running a model op by op from Python: count "
                "the launches per token and read how long the kernels they start run."),
            "## Taking the overhead away",
            Run(f"{P4}/decode_b1_p512_static_eager",
                "A static cache keeps the attention shapes fixed, which a CUDA graph needs, and cuDNN builds "
                "its graph once. Compare its attention calls, launches and time per token with the two runs "
                "above: writing into a preallocated cache and masking it is more small ops than appending to "
                "a tensor, so the static cache alone does not make eager decode fast."),
            Run(f"{P4}/decode_b1_p512_static_compile",
                "`torch.compile(mode=\"reduce-overhead\")`: Inductor's fused kernels captured as one "
                "CUDA graph per token. Look for `cudaGraphLaunch` in the table and compare the "
                "tokens per second printed below it with the runs above. The first call compiles, "
                "which takes a while. To compare it with the static-cache eager run fact by fact, run "
                "`python scripts/analyze.py BEFORE AFTER --diff --step 3` on the two traces in a checkout "
                "of the repository; `--svg DIR` adds both timelines on one time scale."),
            "## Tokens per second against batch size",
            Run(f"{P4}/decode_b1-8-64-256-1024-2048_p128_dynamic_eager",
                "Six batch sizes in one trace, each step inside a `decode b=N` annotation; the lines "
                "under the table give tokens per second per batch size."),
            Run(f"{P4}/decode_b1-8-64-256-1024-2048_p128_dynamic_eager_sdpa-flash",
                "The sweep again with flash attention: at which batch size does eager decode stop "
                "being overhead-bound once the cuDNN graph builds are gone? At the largest batch, compare "
                "its tokens per second with the compiled sweep's below: both are GPU-bound there, and a "
                "verdict says who waits, not how much work there is."),
            Run(f"{P4}/decode_b1-8-64-256-1024-2048_p128_static_compile",
                "The same sweep compiled: one graph per batch size (each compiles first). Where do "
                "tokens per second stop growing in proportion to the batch? Run "
                "`python scripts/analyze.py --blocks` on its trace for each batch size's verdict, and the "
                "snippet with `TORCH_LOGS=output_code` to read what Inductor's fused kernels do."),
        ),
    ),
    Notebook(
        part=5,
        slug="memory-shapes-stacks-roofline",
        title="Part 5 notebook: memory, shapes, stacks, and the roofline",
        intro=(
            "Every example of Part 5: a small GPT's training step with the memory timeline and the "
            "caching allocator's record, with and without activation checkpointing; one Linear at four "
            "sequence lengths grouped by input shape; the guide's step with Python stacks and two "
            "optimizers; the GPU's roofs measured and kernels placed under them. The allocator's "
            "history needs CUDA: on a CPU the memory snippet says so and skips it."
        ),
        cells=(
            "## Memory",
            "The model, in the snippet's own code: a small GPT (an embedding, pre-norm blocks of causal "
            "self-attention and a GELU MLP, a vocabulary head) trained with AdamW in fp32. The allocator's "
            "history is switched on before the steps (`torch.cuda.memory._record_memory_history`) and "
            "dumped as a snapshot after them.",
            Run("06_memory/train_b16_s512_l8_d512_fp32_baseline",
                "The table is sorted by self CUDA memory; the line under it gives the memory timeline's "
                "peak by category. Drop the `.snapshot.pickle` it writes on https://pytorch.org/memory_viz."),
            Run("06_memory/train_b16_s512_l8_d512_fp32_checkpoint",
                "Each block checkpointed: compare the peak and its activations with the run above, and the "
                "step time: the post splits the extra time into GPU work and the GPU waiting on the host."),
            "## Shapes and stacks",
            Run("07_shapes_stacks/shapes_b16_s64-256-1024-4096_1024x4096_bf16",
                "The plain table (which the post leaves out) has one `aten::linear` row; the one grouped by "
                "input shape has one per sequence length. Compare their CUDA times."),
            Run("07_shapes_stacks/stacks_b16_s3_foreach_false",
                "AdamW one parameter at a time: count the optimizer's kernels, and read what stacks cost "
                "at the end of the output."),
            Run("07_shapes_stacks/stacks_b16_s3_fused",
                "The fused optimizer: a few launches per step where the run above makes many. Open its trace "
                "in the post's analyzer to see which Python lines launched them."),
            "## The roofline",
            Run("08_roofline/roofline_bf16_t8192_d4096_h14336",
                "The roofs measured on your GPU, then each kernel's FLOP per byte, achieved TFLOP/s and "
                "TB/s, and the share of its roof it reaches. The bandwidth roof is the faster of a copy and a "
                "triad (`c = a + b`), which read and write; the sum beside them only reads and sets no roof. "
                "The kernels' shapes and FLOP formulas are in the snippet's `kernel_cases`."),
            Run("04_attention/triton_b8_h16_s1024_d64_bf16_warm",
                "Our Triton attention kernel (forward, causal), checked against SDPA in the run, which "
                "the post places under the roof beside SDPA's fused backends: compare its CUDA time per "
                "call with theirs in Part 3's notebook."),
        ),
    ),    Notebook(
        part=None,
        slug="training-step",
        label="A training step, end to end",
        group="TRAINING",
        title="Training step notebook: one step read in order, and what slows a loop",
        intro=(
            "Every example of the training step post: a small transformer's step with AdamW one tensor "
            "at a time, per group and fused; a loop that reads a value back every step, three ways, and "
            "one that does not; a DataLoader without workers, with workers and with pinned memory; a copy "
            "on a side stream against the same copy on the compute stream; and the step's top kernel "
            "measured by Nsight Compute (`ncu` on the PATH, or `--ncu PATH`)."
        ),
        cells=(
            "## One step, read in order",
            Run("10_train_phases/train_b16_s256_l6_d512_foreach_false",
                "AdamW one tensor at a time. In the trace, find the second host thread, `pt_autograd_0`: "
                "the backward runs there. Then run `python scripts/analyze.py` on the trace for its phases."),
            Run("10_train_phases/train_b16_s256_l6_d512_foreach",
                "`foreach=True`: compare the `Optimizer.step#AdamW.step` label's kernels with the run above."),
            Run("10_train_phases/train_b16_s256_l6_d512_fused",
                "`fused=True`: a few kernels per step in the optimizer's label."),
            "## The GPU waiting on the host",
            Run("11_host_sync/sync_none_b1024_h4096_l6",
                "Nothing read back: the host makes the next batch while the GPU runs the last step."),
            Run("11_host_sync/sync_item_b1024_h4096_l6",
                "`loss.item()` every step: find `aten::item`, `aten::_local_scalar_dense`, `cudaMemcpyAsync` "
                "and `cudaStreamSynchronize` in the table, and the idle GPU after each in the trace."),
            Run("11_host_sync/sync_print_b1024_h4096_l6",
                "`print(loss)` every step: count the `aten::item` calls against the run above."),
            Run("11_host_sync/sync_cpu_b1024_h4096_l6",
                "An accuracy moved with `.cpu()` every step: which op waits here?"),
            "## Data loading",
            Run("12_data_loading/data_w0_b64",
                "No worker: the DataLoader's label, `enumerate(DataLoader)#...__next__`, holds each item's "
                "augmentation, and the GPU waits."),
            Run("12_data_loading/data_w4_b64",
                "Four workers: compare the label's length per step with the run above."),
            Run("12_data_loading/data_w4_b64_pinned",
                "Pinned memory and `non_blocking=True`: compare the copy's name on the GPU and the host's "
                "time in `copy to GPU`."),
            "## Two streams",
            Run("13_streams/streams_same_r8192_d4096_m4",
                "The copy on the compute stream: on the GPU it runs between the products."),
            Run("13_streams/streams_side_r8192_d4096_m4",
                "The copy on a side stream: two GPU lanes that overlap."),
            "## Nsight Compute",
            Run("14_ncu_top_kernel/ncu_b16_s256_l6_d512",
                "The step's top kernel, then ncu's throughput and occupancy of one of its launches (under the "
                "table); the measurement is also written beside the trace as `.ncu.json`."),
        ),
    ),
)

# Notebooks whose examples wait for their first GPU run (scripts/series/runs/catalog.py PENDING):
# not written, published or checked until then.
PENDING_SLUGS: frozenset[str] = frozenset()
NOTEBOOKS = tuple(notebook for notebook in NOTEBOOKS if notebook.slug not in PENDING_SLUGS)

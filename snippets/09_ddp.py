# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile a data-parallel training step (torch.distributed + DDP) on several ranks, one trace each.

    uv run snippets/09_ddp.py                                   # 2 GPUs, NCCL
    uv run snippets/09_ddp.py --bucket_cap_mb 100
    uv run snippets/09_ddp.py --straggler 1 --straggler_ms 20   # rank 1 late on purpose
    uv run snippets/09_ddp.py --device cpu --world_size 2 --layers 2 --d_model 64 --batch 16

The script starts its own ranks (torch.multiprocessing, one process per rank and GPU; backend
nccl on cuda, gloo on cpu) and they meet through a file in a temporary folder, so no port is
needed. Under torchrun it is one of the ranks instead (RANK, WORLD_SIZE, LOCAL_RANK set):

    torchrun --standalone --nproc_per_node 2 snippets/09_ddp.py

Each step is forward, backward (DDP all-reduces the gradients bucket by bucket while backward
runs) and an SGD update. On cuda the step runs under bf16 autocast. `--straggler R` gives rank R
extra host work before each forward, so the other ranks wait for it inside the collectives. The
profiler schedule is wait=1, warmup=1, active=--steps (DDP rebuilds its buckets after the first
step, so that happens before the recorded ones).

Writes `ddp_w{world}_bucket{mb}[_straggler{R}]_rank{r}.json` (one chrome trace per rank, the
distributed rank in its `distributedInfo`) and `_rank{r}.txt` (that rank's key_averages table)
into --trace_dir; with --world_size 1 (the same step on one GPU, for comparison) no `_rank0`. Read them together with `python scripts/analyze.py --ranks TRACE_DIR`.
"""

import argparse
import contextlib
import os
import tempfile
import time
from pathlib import Path

# NVLink multicast (NVLS) off, in this process and in every rank it starts, before NCCL or
# PyTorch's symmetric memory read them: on a shared host it can take the GPUs out of service.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
os.environ.update(MULTICAST_OFF)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function, schedule  # noqa: E402

WAIT, WARMUP = 1, 1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world_size", type=int, default=2, help="ranks (one GPU each on cuda)")
    parser.add_argument("--bucket_cap_mb", type=float, default=25.0,
                        help="DDP's gradient bucket size, in MB (DDP's default: 25)")
    parser.add_argument("--straggler", type=int, default=-1, metavar="RANK",
                        help="give this rank extra host work before each forward (-1: none)")
    parser.add_argument("--straggler_ms", type=float, default=20.0,
                        help="the straggler's extra host work per step, in ms")
    parser.add_argument("--steps", type=int, default=3, help="profiled (active) steps")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--batch", type=int, default=8192, help="rows per rank")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--d_model", type=int, default=4096)
    parser.add_argument("--start_method", choices=["spawn", "fork"], default="spawn",
                        help="how the ranks are started (fork: faster on the CPU; never after "
                             "CUDA was initialized, which this script does not do before)")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/09_ddp"))
    args = parser.parse_args(argv)
    if args.world_size < 1:
        parser.error("--world_size must be at least 1")
    if args.straggler >= args.world_size:
        parser.error(f"--straggler {args.straggler} is not a rank of --world_size {args.world_size}")
    return args


def output_stem(args):
    bucket = f"{args.bucket_cap_mb:g}".replace(".", "p")
    straggler = f"_straggler{args.straggler}" if args.straggler >= 0 else ""
    return f"ddp_w{args.world_size}_bucket{bucket}{straggler}"


def make_model(layers, d_model):
    """Linear + GELU blocks: each layer's gradients are ready in turn during backward, so DDP's
    buckets fill one after the other and their all-reduces can overlap the rest of backward."""
    blocks = [nn.Sequential(nn.Linear(d_model, d_model), nn.GELU()) for _ in range(layers)]
    return nn.Sequential(*blocks, nn.Linear(d_model, d_model))


def host_work(ms):
    """Busy host time (not a sleep): what a slow data loader or a noisy neighbour does."""
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


def run_rank(rank, args, init_method):
    on_gpu = args.device == "cuda"
    if on_gpu:
        torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("nccl" if on_gpu else "gloo", init_method=init_method,
                            rank=rank, world_size=args.world_size)
    try:
        profile_rank(rank, args)
    finally:
        dist.destroy_process_group()


def profile_rank(rank, args):
    on_gpu = args.device == "cuda"
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    model = DDP(make_model(args.layers, args.d_model).to(device),
                device_ids=[device.index] if on_gpu else None, bucket_cap_mb=args.bucket_cap_mb)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    generator = torch.Generator(device=device).manual_seed(1 + rank)  # each rank its own data
    inputs = torch.randn(args.batch, args.d_model, device=device, generator=generator)
    targets = torch.randn(args.batch, args.d_model, device=device, generator=generator)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if on_gpu else contextlib.nullcontext()
    straggling = rank == args.straggler

    # --8<-- [start:step]
    def train_step():
        if straggling:
            with record_function("straggler host work"):
                host_work(args.straggler_ms)
        with record_function("forward"), autocast:
            loss = nn.functional.mse_loss(model(inputs), targets)
        with record_function("backward"):
            loss.backward()  # DDP's hooks launch the all-reduce of each bucket as it fills
        with record_function("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    # --8<-- [end:step]

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with profile(activities=activities,
                 schedule=schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1)) as prof:
        for _ in range(WAIT + WARMUP + args.steps):
            train_step()
            if on_gpu:
                torch.cuda.synchronize()  # each step ends when its GPU work (and all-reduces) do
            prof.step()

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=15)
    stem = output_stem(args) + (f"_rank{rank}" if args.world_size > 1 else "")
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    (args.trace_dir / f"{stem}.txt").write_text(table + "\n")
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    if rank == 0:
        print(table)
    print(f"rank {rank}: wrote {args.trace_dir / stem}.json and .txt")


def main(argv=None):
    args = parse_args(argv)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device: use --device cpu (gloo) to try it on the CPU")
        if os.environ.get("RANK") is None and torch.cuda.device_count() < args.world_size:
            raise SystemExit(f"--world_size {args.world_size} needs as many GPUs, "
                             f"this machine has {torch.cuda.device_count()}")
    if os.environ.get("RANK") is not None:  # started by torchrun: this process is one rank
        args.world_size = int(os.environ["WORLD_SIZE"])
        run_rank(int(os.environ["RANK"]), args, "env://")
        return
    with tempfile.TemporaryDirectory(prefix="ddp-rendezvous-") as tmp:
        # A file store: the ranks meet without a port that another program might hold.
        init_method = Path(tmp, "store").as_uri()
        mp.start_processes(run_rank, args=(args, init_method), nprocs=args.world_size,
                           start_method=args.start_method, join=True)


if __name__ == "__main__":
    main()

# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile a training loop fed by a DataLoader: the gap before each step's first kernel, and what fills it.

    uv run snippets/12_data_loading.py --workers 0                  # batches made in the loop's process
    uv run snippets/12_data_loading.py --workers 4                  # made by four worker processes
    uv run snippets/12_data_loading.py --workers 4 --pin_memory     # ... in pinned memory, copied non_blocking
    uv run snippets/12_data_loading.py --device cpu --batch 4 --size 16 --hidden 32

The dataset is synthetic and in memory (no download): small uint8 images made once, and per item
the CPU work of a typical augmentation (a padded random crop, a random flip, conversion to float
and normalization, --passes times). The model is an MLP on the flattened image, under bf16
autocast on cuda, with a fused AdamW. With --pin_memory the DataLoader hands out batches in
pinned (page-locked) host memory and the loop copies them with `non_blocking=True`; without it
the copy is from pageable memory and the host waits for it. The profiler schedule is wait=2
(the workers start), warmup=1, active=--steps.

Writes `data_w{workers}_b{batch}[_pinned].json` (open it in Perfetto) and `.txt` (the
key_averages table) into --trace_dir.
"""

import argparse
import contextlib
import multiprocessing
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, Dataset

CLASSES = 10
WAIT, WARMUP = 2, 1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--pin_memory", action="store_true",
                        help="batches in pinned memory, copied to the GPU with non_blocking=True")
    parser.add_argument("--steps", type=int, default=5, help="profiled (active) steps")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=64, help="image height and width (3 channels)")
    parser.add_argument("--passes", type=int, default=2, help="augmentation passes per item (CPU work)")
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/12_data_loading"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    return parser.parse_args(argv)


def output_stem(args):
    return f"data_w{args.workers}_b{args.batch}{'_pinned' if args.pin_memory else ''}"


# --8<-- [start:dataset]
class AugmentedImages(Dataset):
    """`length` items drawn from 256 random uint8 images, each augmented on the CPU when asked for."""

    def __init__(self, length, size, passes):
        self.images = torch.randint(0, 256, (256, 3, size, size), dtype=torch.uint8,
                                    generator=torch.Generator().manual_seed(0))
        self.labels = torch.arange(256) % CLASSES
        self.length, self.size, self.passes = length, size, passes
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)  # the same item every run
        image = self.images[index % len(self.images)]
        for _ in range(self.passes):  # a padded random crop, a random flip
            padded = nn.functional.pad(image, (4, 4, 4, 4))
            top, left = torch.randint(0, 9, (2,), generator=generator).tolist()
            image = padded[:, top:top + self.size, left:left + self.size]
            if torch.rand((), generator=generator) < 0.5:
                image = image.flip(-1)
        x = (image.float() / 255 - self.mean) / self.std
        return x, self.labels[index % len(self.labels)]
# --8<-- [end:dataset]


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    torch.manual_seed(0)
    total = WAIT + WARMUP + args.steps
    dataset = AugmentedImages(total * args.batch, args.size, args.passes)
    # --8<-- [start:loader]
    loader = DataLoader(
        dataset, batch_size=args.batch, shuffle=False, num_workers=args.workers,
        pin_memory=args.pin_memory and on_gpu,
        # Workers forked before this process touches CUDA (they never do), on every platform.
        multiprocessing_context="fork" if args.workers and "fork" in multiprocessing.get_all_start_methods() else None,
    )
    batches = iter(loader)  # the workers start here, before the model goes to the GPU
    # --8<-- [end:loader]
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * args.size * args.size, args.hidden), nn.GELU(),
                          nn.Linear(args.hidden, args.hidden), nn.GELU(), nn.Linear(args.hidden, CLASSES)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=on_gpu)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if on_gpu else contextlib.nullcontext()

    # --8<-- [start:step]
    def train_step():
        x, y = next(batches)  # labelled enumerate(DataLoader)#..._DataLoaderIter.__next__
        with record_function("copy to GPU"):
            x = x.to(device, non_blocking=args.pin_memory)
            y = y.to(device, non_blocking=args.pin_memory)
        with autocast:
            loss = nn.functional.cross_entropy(model(x).float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    # --8<-- [end:step]

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with profile(
        activities=activities,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1),
    ) as prof:
        for _ in range(total):
            train_step()
            prof.step()

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    report = prof.key_averages().table(sort_by=sort_by, row_limit=20) + "\n"
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(report)
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()

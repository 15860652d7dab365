# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.6", "transformers>=5.0"]
# ///
"""Profile LLM inference with transformers: the prefill of a prompt, or decoding token by token.

    uv run snippets/05_llm_inference.py --phase prefill
    uv run snippets/05_llm_inference.py --phase decode
    uv run snippets/05_llm_inference.py --phase decode --cache static --compile
    uv run snippets/05_llm_inference.py --phase decode --batch 1,16,256,1024 --tokens 3

The model is a Llama-style decoder built from a transformers config (by default the width of
Llama 3 8B with 8 of its 32 layers) with random weights: nothing is downloaded and there is no
tokenizer; the prompt is random token ids. The profiler sees the same kernels, shapes and launches
as with trained weights, because the arithmetic does not depend on the values.

--phase prefill profiles one forward pass over the whole prompt per step (a fresh cache each
time); --phase decode profiles one new token per step, after a prefill and a few warm-up tokens.
Each step ends by copying the new tokens to the host, as a serving loop does to stream them.
--cache static pre-allocates the KV cache; --compile wraps the decode forward in
torch.compile(mode="reduce-overhead"): Inductor kernels replayed as one CUDA graph per token.
--batch takes a comma-separated list: each batch size gets its own cache, and one trace holds
them all, each step inside a `decode b=N` (or `prefill b=N`) annotation. --attention forces one
scaled_dot_product_attention backend (auto lets PyTorch choose).

Writes `{phase}_b{batches}_p{prompt}_{dynamic|static}_{eager|compile}[_sdpa-{backend}].json`
(open it in Perfetto) and `.txt` (the key_averages table, then tokens per second per batch size,
as printed) into --trace_dir.
"""

import argparse
import contextlib
import time
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, StaticCache

WARMUP_TOKENS = 3  # untimed decode steps: CUDA graph trees record on the second and third call
BACKENDS = {
    "math": SDPBackend.MATH,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=["prefill", "decode"], default="decode")
    parser.add_argument("--batch", default="1", help="sequences per step; a comma list sweeps")
    parser.add_argument("--prompt", type=int, default=512, help="prompt length in tokens")
    parser.add_argument("--tokens", type=int, default=5, help="profiled steps per batch size")
    parser.add_argument("--cache", choices=["dynamic", "static"], default="dynamic",
                        help="KV cache: grown by concatenation, or allocated once")
    parser.add_argument("--compile", action="store_true",
                        help='decode through torch.compile(mode="reduce-overhead") (needs --cache static)')
    parser.add_argument("--attention", choices=["auto", *BACKENDS], default="auto",
                        help="the scaled_dot_product_attention backend to force")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv_heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=128256)
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/05_llm_inference"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    args = parser.parse_args(argv)
    args.batches = [int(b) for b in args.batch.split(",")]
    if len(set(args.batches)) != len(args.batches) or min(args.batches) < 1:
        parser.error("--batch takes distinct positive sizes")
    if args.tokens < 1 or args.prompt < 1:
        parser.error("--tokens and --prompt must be positive")
    if args.compile and args.cache != "static":
        parser.error("--compile needs --cache static: a CUDA graph replays fixed addresses")
    if args.compile and args.phase != "decode":
        parser.error("--compile applies to --phase decode")
    return args


def output_stem(args):
    batches = "-".join(map(str, args.batches))
    mode = "compile" if args.compile else "eager"
    stem = f"{args.phase}_b{batches}_p{args.prompt}_{args.cache}_{mode}"
    return stem + (f"_sdpa-{args.attention}" if args.attention != "auto" else "")


def build_model(args, device):
    # --8<-- [start:model]
    config = LlamaConfig(
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        vocab_size=args.vocab,
        max_position_embeddings=8192,
    )
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16).eval()  # random weights
    # --8<-- [end:model]
    return model


class Generation:
    """One batch of sequences being generated: its prompt, its KV cache, its next tokens."""

    def __init__(self, model, decode_forward, batch, args, device):
        self.model, self.decode_forward, self.batch, self.args = model, decode_forward, batch, args
        self.prompt = torch.randint(args.vocab, (batch, args.prompt), device=device)
        max_len = args.prompt + WARMUP_TOKENS + args.tokens + 2
        self.make_cache = (
            (lambda: StaticCache(config=model.config, max_cache_len=max_len))
            if args.cache == "static" else (lambda: DynamicCache(config=model.config))
        )
        self.cache, self.tokens, self.length = None, None, 0

    # --8<-- [start:prefill]
    def prefill(self):
        with record_function(f"prefill b={self.batch}"):
            self.cache = self.make_cache()
            out = self.model(input_ids=self.prompt, past_key_values=self.cache,
                             use_cache=True, logits_to_keep=1)
            self.tokens = out.logits[:, -1:].argmax(-1)
            self.length = self.prompt.shape[1]
            return self.tokens.cpu()  # the first new token goes to the user
    # --8<-- [end:prefill]

    # --8<-- [start:decode]
    def decode(self):
        with record_function(f"decode b={self.batch}"):
            position = torch.full((self.batch, 1), self.length, device=self.prompt.device)
            out = self.decode_forward(input_ids=self.tokens, past_key_values=self.cache,
                                      position_ids=position, use_cache=True)
            self.tokens = out.logits[:, -1:].argmax(-1)
            self.length += 1
            return self.tokens.cpu()  # each step streams its tokens: one sync per token
    # --8<-- [end:decode]


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    torch.manual_seed(0)
    model = build_model(args, device)
    # --8<-- [start:compile]
    decode_forward = model.forward
    if args.compile:
        decode_forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    # --8<-- [end:compile]

    generations = [Generation(model, decode_forward, b, args, device) for b in args.batches]
    attention = sdpa_kernel(BACKENDS[args.attention]) if args.attention != "auto" else contextlib.nullcontext()
    with torch.inference_mode(), attention:
        for generation in generations:
            generation.prefill()
            if args.phase == "decode":
                for _ in range(WARMUP_TOKENS):
                    generation.decode()
        steps = [g for g in generations for _ in range(args.tokens)]
        run = (lambda g: g.prefill()) if args.phase == "prefill" else (lambda g: g.decode())

        on_gpu = device.type == "cuda"
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
        seconds = {b: 0.0 for b in args.batches}
        # --8<-- [start:profile]
        with profile(activities=activities,
                     schedule=schedule(wait=0, warmup=1, active=len(steps), repeat=1)) as prof:
            run(steps[0])  # the profiler's warm-up step, not recorded
            prof.step()
            for generation in steps:
                started = time.perf_counter()
                run(generation)  # ends with tokens on the host, so the clock is honest
                seconds[generation.batch] += time.perf_counter() - started
                prof.step()
        # --8<-- [end:profile]

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=20)
    # Wall clock under the profiler (it adds its own overhead): the trace has the breakdown.
    unit = "prompt tokens/s" if args.phase == "prefill" else "new tokens/s"
    lines = [f"{'batch':>6} {'ms per step':>12} {unit:>16}"]
    for batch in args.batches:
        per_step = seconds[batch] / args.tokens
        tokens = batch * (args.prompt if args.phase == "prefill" else 1)
        lines.append(f"{batch:>6} {per_step * 1e3:>12.2f} {tokens / per_step:>16,.0f}")
    report = table + "\n" + "\n".join(lines) + "\n"
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(report)
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()

"""Several ranks of one distributed run, read side by side: communication, compute, their overlap,
time waiting in collectives, and the slowest rank of each step.

Two stages, so that any engine can run the first over hundreds of files:

- `rank_facts(path)` is a pure function of one trace file: it returns a small picklable
  `RankFacts` (totals, per-step numbers, the collectives' times on that rank's own clock). Map it
  with the local process pool (`read_ranks`), or with Ray, Dask, Spark or multiprocessing
  (docs/guide/analyze-your-trace.md, "Many ranks").
- `cross_rank(list_of_rank_facts)` puts the ranks on one time axis and compares them.

Definitions (docs/guide/analyze-your-trace.md):

- communication: on a GPU, the NCCL kernels (HTA's name rule, `^nccl.*Kernel`); in a trace with no
  GPU activity (the gloo backend on the CPU), the collectives' own host rows (`gloo:all_reduce`,
  run on gloo's worker threads). Compute: the compute kernels (HTA's rules); on the CPU, the
  operators on the threads that run no collective, the collectives' launches (`c10d::`) excepted.
- overlap: the time both run, as a share of the communication time (HTA's
  `get_comm_comp_overlap`: merged intervals of each, the time both are running over the merged
  communication time).
- steps: each ProfilerStep#N from its start on the host to the next one's start (the last to the
  end of the trace), so that GPU work launched in a step counts in it.
- alignment: a rank's time t is `baseTimeNanoseconds` (Kineto's offset from its clock to Unix
  time) plus t; ranks on one host share the clock and agree exactly, ranks on several hosts as
  well as their clocks are synchronized. Without `baseTimeNanoseconds` (older Kineto) the traces'
  own timestamps are taken as one clock, as HTA does (which is right on one host only).
- waiting: the k-th collective of every rank is one collective (DDP issues its buckets in the same
  order everywhere). It cannot finish before the last rank has entered it, so a rank that entered
  it w us before the last one spent min(w, its duration) waiting in it. The slowest rank of a step
  is the one that entered the step's last collective last; by how much: how long after the first.
  Without collectives, the rank with the longest step, ahead of the median of the others.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median

from .analysis import _ms, kernel_kind
from ..model.names import shown, text_lines
from ..model.intervals import Merged, covered, intersection, union_of_times
from ..model.trace import Trace, TraceError, load_trace

# Host rows of a collective's own execution, in a trace without GPU activity (gloo, MPI, UCC).
_HOST_COLLECTIVE = re.compile(r"^(gloo|mpi|ucc):")
# Host operators that launch or enqueue a collective: neither its time nor compute.
_COLLECTIVE_LAUNCH = re.compile(r"^(c10d::|record_param_comms|nccl:|gloo:|mpi:|ucc:)")
_RANK_IN_NAME = re.compile(r"rank[_-]?([0-9]{1,9})", re.I)
TRACE_SUFFIXES = (".json", ".json.gz")
NOT_TRACES = (".meta.json", ".samples.json")  # the refresh's metadata beside frozen traces


@dataclass(frozen=True)
class Collective:
    name: str
    start: float  # us on the rank's own axis (its Trace's origin)
    end: float


@dataclass(frozen=True)
class StepSpan:
    name: str  # ProfilerStep#N
    start: float
    end: float
    comm_us: float
    compute_us: float
    overlap_us: float


@dataclass(frozen=True)
class RankFacts:
    """What one trace file says about its rank; all times in us on its own axis."""

    source: str
    rank: int | None  # from distributedInfo, else from a `rank<N>` in the file name
    world_size: int | None
    backend: str | None
    measured: str  # what communication is here: "NCCL kernels" or "host collectives"
    base_time_ns: int | None  # Kineto's baseTimeNanoseconds
    origin_us: float  # the trace's first timestamp (Trace.origin_us)
    end_us: float
    comm_us: float  # over the steps (the whole trace without steps)
    compute_us: float
    overlap_us: float
    steps: tuple[StepSpan, ...]
    collectives: tuple[Collective, ...]

    @property
    def overlap_pct(self) -> float | None:
        return 100.0 * self.overlap_us / self.comm_us if self.comm_us else None


def rank_facts(path: str | Path) -> RankFacts:
    """The facts of one rank's trace file: a pure function of the file, for any engine's map."""
    trace = load_trace(path, skip_kinds=frozenset({"python"}))
    trace.source = str(path)
    return facts_of_rank(trace)


def facts_of_rank(trace: Trace) -> RankFacts:
    comm, compute, collectives, measured = _comm_and_compute(trace)
    # Their overlap once for the trace, each step's read out of it (not made again per step).
    both = intersection(comm, compute) if len(comm[0]) >= len(compute[0]) else intersection(compute, comm)
    windows = _step_windows(trace)
    steps = tuple(_step_span(name, start, end, comm, compute, both) for name, start, end in windows)
    if steps:
        totals = [sum(getattr(s, f) for s in steps) for f in ("comm_us", "compute_us", "overlap_us")]
    else:
        whole = _step_span("whole trace", 0.0, trace.end_us, comm, compute, both)
        totals = [whole.comm_us, whole.compute_us, whole.overlap_us]
    info = trace.metadata.get("distributedInfo")
    info = info if isinstance(info, dict) else {}
    base = trace.metadata.get("baseTimeNanoseconds")
    if base is not None and not (type(base) is int and 0 <= base < 1 << 63):
        raise TraceError(f"{shown(trace.source)}: baseTimeNanoseconds is not a time in "
                         "nanoseconds (an integer from 0 to 2^63)")
    size = info.get("world_size")
    return RankFacts(
        source=trace.source, rank=trace.rank if trace.rank is not None else _rank_from_name(trace.source),
        world_size=size if type(size) is int and 0 < size < 1 << 31 else None,
        backend=str(info["backend"]) if info.get("backend") is not None else None,
        measured=measured, base_time_ns=base,
        origin_us=trace.origin_us, end_us=trace.end_us,
        comm_us=totals[0], compute_us=totals[1], overlap_us=totals[2],
        steps=steps, collectives=tuple(collectives))


def _comm_and_compute(trace: Trace) -> tuple[Merged, Merged, list[Collective], str]:
    if trace.has_gpu_activity:
        kinds = [kernel_kind(e.name, e.kind) for e in trace.gpu_activities]
        comm = [e for e, k in zip(trace.gpu_activities, kinds) if k == "communication"]
        compute = [e for e, k in zip(trace.gpu_activities, kinds) if k == "compute"]
        measured = "NCCL kernels"
    else:
        host = [e for e in trace.events if e.kind in ("annotation", "cpu_op")]
        comm = [e for e in host if _HOST_COLLECTIVE.match(e.name)]
        comm_lanes = {(e.pid, e.tid) for e in comm}
        compute = [e for e in host if e.kind == "cpu_op" and (e.pid, e.tid) not in comm_lanes
                   and not _COLLECTIVE_LAUNCH.match(e.name)]
        measured = "host collectives"
    collectives = sorted((Collective(e.name, e.ts, e.end) for e in comm), key=lambda c: (c.start, c.end))
    return _merged(comm), _merged(compute), collectives, measured


def _merged(events) -> Merged:
    return union_of_times([e.ts for e in events], [e.end for e in events])


def _step_windows(trace: Trace) -> list[tuple[str, float, float]]:
    steps = trace.steps
    ends = [s.ts for s in steps[1:]] + [max(trace.end_us, steps[-1].end) if steps else 0.0]
    return [(s.name, s.ts, end) for s, end in zip(steps, ends)]


def _step_span(name: str, start: float, end: float, comm: Merged, compute: Merged,
               both: Merged) -> StepSpan:
    """One step's times; `both`: the intersection of `comm` and `compute`."""
    return StepSpan(name, start, end, covered(comm, start, end), covered(compute, start, end),
                    covered(both, start, end))


def _rank_from_name(source: str) -> int | None:
    found = _RANK_IN_NAME.findall(Path(source).name)
    return int(found[-1]) if found else None


# --- reading many files -----------------------------------------------------------------------


def rank_files(paths: list[Path]) -> list[Path]:
    """The trace files named, a directory standing for the traces directly inside it."""
    files = []
    for path in paths:
        try:
            is_dir = path.is_dir()
        except OSError:  # a name too long: read later, which says so
            is_dir = False
        if not is_dir:
            files.append(path)
            continue
        try:
            inside = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)
                            and not p.name.endswith(NOT_TRACES))
        except OSError as err:  # a name too long, no permission to list it
            raise TraceError(f"{shown(path)}: cannot read this directory "
                             f"({err.strerror or err})") from None
        if not inside:
            raise TraceError(f"{shown(path)}: no .json or .json.gz trace in this directory")
        files += inside
    return files


def read_ranks(paths: list[Path], workers: int | None = None) -> list[RankFacts]:
    """`rank_facts` of each file, in parallel processes (`workers`, default: one per core up to
    one per file), or in this process for one file or one core."""
    workers = min(len(paths), workers or os.cpu_count() or 1)
    if workers <= 1:
        return list(map(rank_facts, paths))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(rank_facts, paths))


# --- across ranks -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RankRow:
    rank: int
    source: str
    offset_us: float  # where its time 0 falls on the common axis
    comm_us: float
    compute_us: float
    overlap_us: float
    overlap_pct: float | None
    wait_us: float  # in collectives, waiting for the other ranks
    measured: str


@dataclass(frozen=True)
class StepRow:
    name: str
    dur_us: dict[int, float]  # rank -> its step's length
    wait_us: dict[int, float]  # rank -> time waiting in the step's collectives
    slowest: int
    behind_us: float  # how late the slowest entered the step's last collective (or longer ran)
    by: str  # "last collective" or "step length"


@dataclass(frozen=True)
class RanksReport:
    alignment: str
    ranks: list[RankRow]
    steps: list[StepRow]
    matched_collectives: int
    notes: list[str]

    def to_dict(self) -> dict:
        return asdict(self)


def cross_rank(facts: list[RankFacts]) -> RanksReport:
    """The ranks on one time axis, compared. Ranks are numbered by what their traces say, else
    in the order given."""
    notes = []
    ranks = _numbered(facts, notes)
    offsets, alignment = _offsets(ranks)
    count = min((len(f.collectives) for f in ranks.values()), default=0)
    if len({len(f.collectives) for f in ranks.values()}) > 1:
        notes.append("the ranks recorded different numbers of collectives ("
                     + ", ".join(f"rank {r}: {len(f.collectives)}" for r, f in ranks.items())
                     + f"); the first {count} are matched by order")
    waits = {r: [0.0] * count for r in ranks}
    arrivals = {r: [0.0] * count for r in ranks}
    for k in range(count):
        starts = {r: f.collectives[k].start + offsets[r] for r, f in ranks.items()}
        last = max(starts.values())
        for r, f in ranks.items():
            collective = f.collectives[k]
            waits[r][k] = min(max(last - starts[r], 0.0), collective.end - collective.start)
            arrivals[r][k] = starts[r]
    rows = [RankRow(r, f.source, offsets[r], f.comm_us, f.compute_us, f.overlap_us, f.overlap_pct,
                    sum(waits[r]), f.measured) for r, f in ranks.items()]
    return RanksReport(alignment, rows, _steps(ranks, offsets, waits, arrivals, count), count, notes)


def _numbered(facts: list[RankFacts], notes: list[str]) -> dict[int, RankFacts]:
    given = [f.rank for f in facts]
    if None in given or len(set(given)) != len(given):
        notes.append("the traces do not each name a distinct rank (distributedInfo or rank<N> in "
                     "the file name): numbered in the order given")
        return dict(enumerate(facts))
    return {f.rank: f for f in sorted(facts, key=lambda f: f.rank)}


def _offsets(ranks: dict[int, RankFacts]) -> tuple[dict[int, float], str]:
    """Each rank's shift onto the common axis, whose 0 is the earliest rank's first event.
    Differences of baseTimeNanoseconds are taken in integer nanoseconds first: as a float in us,
    a Unix time keeps only a quarter of a microsecond."""
    bases = {r: f.base_time_ns for r, f in ranks.items()}
    if all(b is not None for b in bases.values()):
        low = min(bases.values())
        starts = {r: (bases[r] - low) / 1000.0 + f.origin_us for r, f in ranks.items()}
        how = "baseTimeNanoseconds (each trace's offset to Unix time)"
    else:
        starts = {r: f.origin_us for r, f in ranks.items()}
        how = "the traces' own timestamps as one clock (no baseTimeNanoseconds; one host only)"
    first = min(starts.values(), default=0.0)
    return {r: s - first for r, s in starts.items()}, how


def _steps(ranks, offsets, waits, arrivals, count) -> list[StepRow]:
    names = [s.name for s in next(iter(ranks.values())).steps] if ranks else []
    # Each rank's steps by name (the first of a name) and its collectives by start: a step is
    # looked up, and its collectives found, without a pass over all of them for each step.
    by_name = {r: _first_by_name(f.steps) for r, f in ranks.items()}
    started = {r: _Starts(f.collectives[:count]) for r, f in ranks.items()}
    common = [n for n in names if all(n in steps for steps in by_name.values())]
    rows = []
    for name in common:
        spans = {r: steps[name] for r, steps in by_name.items()}
        inside = {r: started[r].between(spans[r].start, spans[r].end) for r in ranks}
        dur = {r: s.end - s.start for r, s in spans.items()}
        wait = {r: sum(waits[r][k] for k in inside[r]) for r in ranks}
        shared = set.intersection(*(set(v) for v in inside.values())) if inside else set()
        if shared and len(ranks) > 1:
            last = max(shared)
            entered = {r: arrivals[r][last] for r in ranks}
            slowest = max(entered, key=entered.get)
            rows.append(StepRow(name, dur, wait, slowest, entered[slowest] - min(entered.values()),
                                "last collective"))
        else:
            slowest = max(dur, key=dur.get)
            others = [d for r, d in dur.items() if r != slowest]
            rows.append(StepRow(name, dur, wait, slowest, dur[slowest] - median(others) if others else 0.0,
                                "step length"))
    return rows


def _first_by_name(steps: tuple[StepSpan, ...]) -> dict[str, StepSpan]:
    found: dict[str, StepSpan] = {}
    for step in steps:
        found.setdefault(step.name, step)
    return found


class _Starts:
    """The collectives of one rank by start, to find those that start in a step."""

    def __init__(self, collectives: tuple[Collective, ...]):
        # NaN starts left out: no step holds them. Sorted by start, then by number.
        self.order = sorted((k for k, c in enumerate(collectives) if c.start == c.start),
                            key=lambda k: collectives[k].start)
        self.starts = [collectives[k].start for k in self.order]

    def between(self, start: float, end: float) -> list[int]:
        """The numbers k, in order, of the collectives with start <= its start < end."""
        if not start < end:  # empty, or NaN
            return []
        lo, hi = bisect_left(self.starts, start), bisect_left(self.starts, end)
        return sorted(self.order[lo:hi])


# --- text -------------------------------------------------------------------------------------


def report_text(report: RanksReport) -> str:
    lines = [f"{len(report.ranks)} ranks, aligned on {report.alignment}"]
    lines.append(f"{'rank':>4}  {'comm':>10}  {'compute':>10}  {'overlap':>8}  {'waiting':>10}  "
                 f"{'offset':>10}  trace")
    for row in report.ranks:
        pct = "-" if row.overlap_pct is None else f"{row.overlap_pct:.1f}%"
        lines.append(f"{row.rank:>4}  {_ms(row.comm_us):>10}  {_ms(row.compute_us):>10}  {pct:>8}  "
                     f"{_ms(row.wait_us):>10}  {_ms(row.offset_us):>10}  {shown(Path(row.source).name)}")
    measured = sorted({row.measured for row in report.ranks})
    lines.append(f"communication: {', '.join(measured)}; overlap: share of it during compute "
                 f"(HTA's definition); waiting: in collectives, for the last rank to enter "
                 f"({report.matched_collectives} collectives matched across ranks)")
    if report.steps:
        lines.append("slowest rank per step:")
        for step in report.steps:
            lengths = ", ".join(f"rank {r} {_ms(d)}" for r, d in step.dur_us.items())
            if step.by == "last collective":
                said = f"entered the step's last collective {_ms(step.behind_us)} after the first rank"
            else:
                said = f"its step {_ms(step.behind_us)} longer than the median of the others"
            lines.append(f"  {shown(step.name)}: rank {step.slowest}, {said} (steps: {lengths})")
    lines += [f"note: {note}" for note in report.notes]
    return text_lines(lines)

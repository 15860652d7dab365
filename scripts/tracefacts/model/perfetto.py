"""How the Perfetto UI reads a chrome (JSON) trace: where one of our times lies on its time axis,
and which track a complete event goes to. The links that open a trace at a finding
(scripts/tracefacts/pictures/perfetto_links.py) and the check of what its import would drop
(scripts/tracefacts/facts/recording.py) both ask here, so that they agree with each other and with
Perfetto.

What Perfetto does, read in its source (google/perfetto, src/trace_processor/importers/json/ and
ui/src/plugins/dev.perfetto.DeeplinkQuerystring/):

- Time: a JSON `ts` or `dur` is microseconds; the importer makes it integer nanoseconds on the
  trace's own clock, with no offset (not relative to the first event, not shifted to Unix time):
  a number read as a double becomes `static_cast<int64_t>(value * 1000.0)` (json_utils.h,
  `CoerceToTs`), an integer `value * 1000`. Older importers shifted the number's text by three
  decimal places instead (json_trace_tokenizer.cc); the two differ where the double times 1000
  falls just under an integer (a `dur` of 32.541 is 32540 ns one way, 32541 the other: 0.35% of
  the numbers of our frozen traces, all of them short durations). `displayTimeUnit` (Kineto writes
  "ms") is counted in the import stats and otherwise ignored. So Perfetto's time of a finding is its microseconds as
  written in the file, times 1000; our times are microseconds since the trace's first complete
  event (`Trace.origin_us`), so the file's are those plus the origin.
- Deep links: `visStart`/`visEnd` (integers, in those nanoseconds) set the visible window once
  the trace is loaded, but only when `trace start <= visStart < visEnd <= trace end`; `ts` and
  `dur` select the slice of the `slice` table with exactly that ts (and dur); `pid` and `tid` are
  accepted in the route (route_schema.ts) but the selection reads ts and dur only.
- Tracks: a complete event goes to the track of its thread: a numeric pid or tid is taken as an
  unsigned 32-bit number (a value outside that range as absent: pid 0, tid = pid); a string pid or
  tid stands for an interned name (Kineto writes "Spans", "PyTorch Profiler"). Kineto writes GPU
  activities with the device as pid and the stream as tid.
"""

from __future__ import annotations

PERFETTO_UI = "https://ui.perfetto.dev"
_UINT32 = 1 << 32


def perfetto_ns(us: float) -> int:
    """Perfetto's nanoseconds of a time written in the file as `us` microseconds: an integral
    number exactly times 1000, any other its double times 1000.0, truncated (CoerceToTs)."""
    if us.is_integer():
        return int(us) * 1000
    return int(us * 1000.0)


def ns_agree(us: float) -> bool:
    """Whether both ways Perfetto has read a number give the same nanoseconds for this one (its
    shortest text, as JSON writers write it, shifted three places, against `perfetto_ns`): only
    such a time selects the same slice whatever Perfetto's version."""
    from decimal import ROUND_DOWN, Decimal, InvalidOperation

    try:
        shifted = int((Decimal(repr(us)) * 1000).to_integral_value(rounding=ROUND_DOWN))
    except (InvalidOperation, ValueError, OverflowError):  # NaN, infinities
        return False
    return shifted == perfetto_ns(us)


def track_of(pid, tid):
    """The thread track Perfetto puts a complete event of this pid and tid on (a hashable key):
    numbers as uint32 (out of range: absent, pid 0 and tid = pid), strings as themselves."""
    pid = _thread_number(pid)
    tid = _thread_number(tid)
    pid = 0 if pid is None else pid
    return pid, pid if tid is None else tid


def _thread_number(value):
    if isinstance(value, str):
        return ("name", value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    return value if 0 <= value < _UINT32 else None


def link_thread(value) -> int | None:
    """A pid or tid as a deep link can name it: a number in uint32's range, else None."""
    found = _thread_number(value)
    return found if isinstance(found, int) else None

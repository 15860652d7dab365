"""The trace model: a torch.profiler / Kineto chrome trace read into plain objects. This module
is the way in: the model itself is `scripts.tracefacts.model.records`, the reading `scripts.tracefacts.model.build`.

Every other stage (analysis, timelines, pages) reads traces through `load_trace`, so format
differences between Kineto versions and vendors are settled here, once:

- timestamps become microseconds since the earliest event (`Trace.origin_us` keeps the offset), for
  old absolute-epoch traces and new `baseTimeNanoseconds` ones alike;
- categories become one `kind` per event (older spellings such as `Kernel`/`Runtime`, ROCm's
  `hip_*` names and CUDA's driver launches map to the same kinds);
- a file that is not a trace raises `TraceError` with a one-line message.

`load_trace` (scripts/tracefacts/model/build.py, the model's builder) reads the file with `scripts.tracefacts.reading.events` (a stream, in time linear in its size, from a
path, stdin or a pipe), keeps only the `args` that the analysis and the timeline read
(`KEPT_ARGS`), and no flow events: a 200k-event trace loads faster than `json.load` reads it, in
a fraction of the memory. `load_trace(path, skip_kinds=...)` does not make Events of the kinds it
is told to skip, only keeps their times (`Trace.skipped`): the facts need no more of the ops and
the Python frames; of launch calls and GPU activities, it keeps what the facts read as columns
(scripts/tracefacts/model/launches.py), a fraction of an Event's memory.
"""

from .build import build_trace, load_trace, read_json  # noqa: F401
from .records import (GPU_ACTIVITY_KINDS, KEPT_ARGS, KIND_BY_CATEGORY, LAUNCH_KINDS,  # noqa: F401
                          PROFILER_FLAGS, STEP_PREFIX, Event, Instant, Skipped, Trace, Window,
                          kind_of, paused_gc, select_window, step_number)
from ..reading.text import DEFAULT_MAX_BYTES, MAX_BYTES_ENV, TraceError  # noqa: F401

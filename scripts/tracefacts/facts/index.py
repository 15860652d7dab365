"""What every window of a trace needs, computed once per trace as columns (`TraceIndex`): the
GPU activities ordered by placing time, with their kinds by HTA's names (`kernel_kind`), the gaps
between activities on a stream, the GPU's idle time before each activity by cause, the launch
calls matched to their activities, and merged host and GPU intervals. scripts/tracefacts/facts/window.py
reads a window out of it.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import deque
from bisect import bisect_left, bisect_right
from itertools import compress, islice, repeat
from operator import add, eq, ge, gt, le, lt, neg, not_, or_, sub

from .kernels import work_class
from .terms import HOST_WORK_KINDS, KERNEL_WAIT_US
from ..model.intervals import (LatestEnds, Merged, difference, intersection, sorted_values, union_of_arrays,
                        union_of_spans, union_of_times)
from ..model.launches import activity_table, launch_table
from ..model.columnar.rows import (Coded, longest_first_at_equal_starts, pieces, stable_order,
                     stable_order_in_pieces, taken, taken_all)
from ..model.trace import LAUNCH_KINDS, Trace, Window

# HTA's kernel kinds (hta/utils/utils.py): the same expressions, so that the breakdowns agree.
_COMMUNICATION = re.compile(r"^nccl.*Kernel")
_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
# Host calls that block until the GPU catches up: time in them is waiting, not host work.
_HOST_WAIT_CALL = re.compile(r"Synchronize|^(cuda|hip)Memcpy$|^cuMemcpy(DtoH|HtoD)?(_v2)?$")
# Host calls that hand the GPU work (kernels, graphs, copies, memsets): one of them with no GPU
# activity in the trace launched work the trace does not show (the kernels of a CUDA graph).
_LAUNCHES_WORK = re.compile(r"Launch(?!HostFunc)|Memcpy\w*Async|Memset\w*Async")


def kernel_kind(name: str, kind: str = "kernel") -> str:
    """compute / communication / memory / other, by HTA's name rules; memcpy and memset rows are
    memory whatever their name (ROCm names them e.g. 'CopyDeviceToDevice')."""
    if _COMMUNICATION.match(name):
        return "communication"
    if _MEMORY.match(name) or kind != "kernel":
        return "memory"
    return "compute" if not _NOT_COMPUTE.match(name) else "other"


GAP_CATEGORIES = ("host_wait", "kernel_wait", "other")


class TraceIndex:
    """What every window needs, computed once per trace, as columns (lists with one value per
    item): the GPU activities ordered by placing time, the gaps between activities on a stream,
    the launch calls matched to their activities, and merged host and GPU intervals. A window is
    a range of these lists, found by bisection; the facts are made of operations on whole lists
    rather than of loops in Python."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.trace_end = trace.end_us
        waits = _host_waits(trace)
        self._activities(trace)
        self._gaps()
        self._hidden_launches(waits)
        self._idle_before()
        self._launches()
        self.host_work = _host_work(trace)
        self.host_wait = intersection(self.host_work, waits)
        self.compute_union: tuple | None = None  # of all the compute activities, once made

    def _activities(self, trace: Trace) -> None:
        activities = activity_table(trace)
        self.calls = calls = launch_table(trace)
        launches = activities.launch_rows(calls)
        # A GPU activity belongs to the window in which its launch call started (HTA's iterations).
        placed = _at_rows(calls.ts, launches, activities.ts)
        order, self.placed_times, parts = stable_order_in_pieces(placed)
        del placed
        if parts is False:  # as a rule the activities' own order, or a few runs of it
            parts = pieces(order)
        # The row of each one's runtime/driver call in `calls` (-1 without one), in the launch
        # table's width (4 bytes as a rule); floats in arrays (8 bytes a value, not a float
        # object's 32); names, kinds, devices and streams as codes (Coded): a byte or two each.
        # All taken at once (the same rows).
        coded = (activities.names, activities.kinds, activities.device_of, activities.stream_of)
        self.launches, self.starts, self.durs, *codes = taken_all(
            [launches, activities.ts, activities.dur, *(column.codes for column in coded)],
            order, parts)
        del launches
        self.ends = array("d", map(add, self.starts, self.durs))
        self.names, self.event_kinds, self.device_of, self.stream_of = (  # kinds: kernel, memcpy..
            column.with_codes(found) for column, found in zip(coded, codes))
        del codes
        self.kinds = _kernel_kinds(self.names, self.event_kinds)
        self.work_classes = _kernel_kinds(self.names, self.event_kinds, work_class)
        # Where each activity of the table (in trace order: by start) is placed: the rows of
        # `_gaps` by start, without a sort.
        self._placed_at = array("i" if len(order) < (1 << 31) else "q", [0]) * len(order)
        deque(map(self._placed_at.__setitem__, order, range(len(order))), 0)
        del order, parts
        # Each device's rows, found in one pass (not a pass over every row for each device):
        # `_idle_before` reads them too.
        self._device_rows = rows_by(self.device_of)
        self.devices = sorted(set(self.device_of), key=str)
        self.busy_by_device = {  # in arrays: a merged interval of hundreds of thousands each
            device: union_of_arrays(*self._on_device(device)) for device in self.devices
        }
        self._busy_pool = (_BusyPool(self.busy_by_device)
                           if len(self.busy_by_device) > _FEW_KEYS else None)

    def _on_device(self, device) -> list:
        """The starts and ends of one device's activities (of all of them, the columns)."""
        if len(self._device_rows) == 1:
            return [self.starts, self.ends]
        return taken_all([self.starts, self.ends], self._device_rows[device])

    def _gaps(self) -> None:
        """Every gap between consecutive activities of a stream, categorized as HTA does, sorted
        by the placing time of the activity after the gap. As in HTA, an overlap (a negative
        gap, which clock rounding makes) counts negative, so that rounding jitter cancels out."""
        starts, ends = self.starts, self.ends
        # When the launch call of each activity began; -inf without one (never host wait).
        call_starts = self.calls.ts
        launch_starts = _at_rows(call_starts, self.launches, repeat(-math.inf))
        pairs = Coded()  # (device, stream) of each
        pairs.extend_pairs(list(self.device_of), list(self.stream_of))
        by_stream = rows_by(pairs)  # in placing order
        by_start = self._by_start_of_streams(pairs, by_stream)
        del pairs, self._placed_at
        self.stream_numbers = {key: number for number, key in enumerate(by_stream)}
        times, codes, durs, keys = array("d"), array("i"), array("d"), Coded()
        # Each stream's activities by start; kept for `_idle_before` (a GPU of one stream, as
        # a rule: the same order, not sorted twice).
        self._by_stream_start, self._all_by_start = {}, None
        for key, on_stream in by_stream.items():
            on_stream = self._by_stream_start[key] = by_start.get(key) or _by_start(on_stream,
                                                                                  starts)
            # Of one stream, every activity by start (a stable sort): `_launches` reads it too.
            self._all_by_start = on_stream if len(by_stream) == 1 else None
            previous, current = on_stream[:-1], on_stream[1:]
            previous_ends = taken(ends, previous)
            current_starts, current_launches, placed = taken_all(
                [starts, launch_starts, self.placed_times], current)
            gaps = array("d", map(sub, current_starts, previous_ends))
            host_wait = bytes(map(gt, current_launches, previous_ends))
            del current_starts, current_launches
            kernel_wait = bytes(map(lt, gaps, repeat(KERNEL_WAIT_US)))
            base = 3 * self.stream_numbers[key]  # code: 3 * stream number + category number
            # category: 0 host wait, else 1 kernel wait, else 2 (= 2 - host - (host or kernel))
            codes.extend(map(sub, map(sub, repeat(base + 2), host_wait),
                             map(or_, host_wait, kernel_wait)))
            times.extend(placed)
            durs += gaps
            keys.extend([key] * len(gaps))
        order, self.gap_times, parts = stable_order_in_pieces(times)
        del times
        if parts is False:
            parts = pieces(order)
        self.gap_codes, self.gap_durs, found = taken_all([codes, durs, keys.codes], order, parts)
        self.gap_keys = keys.with_codes(found)

    def _by_start_of_streams(self, pairs: Coded, by_stream: dict) -> dict:
        """The rows of each stream (`pairs`: the stream of each row) in order of start, a
        stable sort (as `_by_start`): the table's order (`_placed_at`: by start) of that
        stream's rows, those of equal starts put back in placing order. A stream whose rows in
        that order are not in order of start (NaN) is left out (sorted by `_by_start`)."""
        rows = self._placed_at
        found = {}
        if len(by_stream) > 1:  # each stream's rows in the table's order, in one pass
            grouped = grouped_by(rows, taken(pairs.codes, rows))
        for key in by_stream:
            mine = rows if len(by_stream) == 1 else grouped[pairs._code[key]]
            starts = taken(self.starts, mine)
            if all(map(le, starts, islice(starts, 1, None))):
                longest_first_at_equal_starts(mine, starts, neg)  # ties: the lower row first
                found[key] = mine
        return found

    def _idle_before(self) -> None:
        """The GPU's idle time right before each activity, by cause (`idle_host_wait`,
        `idle_queued`, `idle_other`): from the end of all earlier work on the same GPU, whatever
        its stream (a gap on one stream while another runs is not idle time), to the activity's
        start. Until its launch call returned, the GPU waited for the host; after that, the work
        was queued (the GPU's launch latency, or a dependency); without a launch call in the
        trace, the cause is unknown (other). Before the first activity of a GPU the recording
        shows no earlier work: only the time from that activity's launch call counts, not what
        the recording happened to hold before the first launch."""
        n = len(self.starts)
        self.idle_host_wait, self.idle_queued, self.idle_other = (array("d", bytes(8 * n))
                                                                  for _ in range(3))
        call_starts, call_durs = self.calls.ts, self.calls.dur
        call_ends = array("d", map(add, call_starts, call_durs))
        streams: dict = {}  # device -> its streams' keys
        for key in self._by_stream_start:
            streams.setdefault(key[0], []).append(key)
        for device, members in self._device_rows.items():
            keys = streams[device]
            # A GPU of one stream: its rows, sorted by start already.
            members = (self._by_stream_start[keys[0]] if len(keys) == 1 else
                       _by_start(members, self.starts))
            starts, ends = taken_all([self.starts, self.ends], members)
            first_launch = self.launches[members[0]]
            origin = starts[0] if first_launch < 0 else min(call_starts[first_launch], starts[0])
            launches, host_wait, queued, other = (self.launches, self.idle_host_wait,
                                                  self.idle_queued, self.idle_other)
            # One pass (as a rule nearly every activity follows some idle time), with max and min
            # as the builtins pick, without a call: `free_at`, where the GPU's earlier work ended
            # (the running maximum of the ends before each one).
            free_at = origin
            for i, start, end in zip(members, starts, ends):
                gap = start - free_at
                gap = 0.0 if 0.0 > gap else gap
                if gap:
                    launch = launches[i]
                    if launch < 0:
                        other[i] = gap
                    else:  # min(max(returned - free_at, 0.0), gap)
                        host = call_starts[launch] + call_durs[launch] - free_at
                        host = 0.0 if 0.0 > host else host
                        host = gap if gap < host else host
                        host_wait[i], queued[i] = host, gap - host
                free_at = end if end > free_at else free_at
            self._split_idle(device, members, starts, call_ends)
        del self._by_stream_start, self._device_rows, self._hidden

    def _split_idle(self, device, members: array, starts: array, call_ends: array) -> None:
        """The GPU's idle time on `device` (`members`: its activities, `starts` theirs, by
        start), as the time split reads it (`stalled_by_device`, `unattributed_by_device`):
        stalled while work was launched and not started yet (from its launch call's return to
        its start; after a launch whose GPU work the trace does not show, until the GPU's next
        activity or the return of a synchronizing call), unattributed in the gaps before
        activities without a launch call, not stalled; the rest of its idle time the GPU
        waited for the host. Merged intervals, in arrays (`call_ends`: where each launch call
        returned)."""
        rows = taken(self.launches, members)
        launched = bytes(map(ge, rows, repeat(0)))
        returns = _at_rows(call_ends, rows, repeat(math.inf))
        pending = bytes(map(lt, returns, starts))
        returns, until = (array("d", compress(column, pending)) for column in (returns, starts))
        del pending
        for returned, ends_by in self._hidden.get(device, ()):
            following = bisect_right(starts, returned)
            next_start = starts[following] if following < len(starts) else math.inf
            returns.append(returned)
            until.append(min(next_start, ends_by))
        busy = self.busy_by_device[device]
        pending = union_of_arrays(returns, until)
        del returns, until
        self.stalled_by_device[device] = stalled = difference(pending, busy)
        del pending
        # Before activities without a launch call: their gaps (idle by construction).
        unknown = bytes(map(not_, launched))
        other = kept(taken(self.idle_other, members), unknown)
        if any(other):
            other_ends = kept(starts, unknown)
            self.unattributed_by_device[device] = difference(
                union_of_arrays(array("d", map(sub, other_ends, other)), other_ends), stalled)

    def _hidden_launches(self, waits: Merged) -> None:
        """The launch calls that hand the GPU work but have no GPU activity in the trace (a CUDA
        graph launch whose kernels it does not show): per device, (when each returned, when its
        work was done at the latest as the host sees it: the end of the first synchronizing call
        begun after it, else the trace's end), and `hidden_launch_times` (the calls' starts,
        sorted) and `hidden_launch_names`. A call's device: the only one, else the one its
        thread launched the most visible work on."""
        calls = self.calls
        self.stalled_by_device, self.unattributed_by_device = {}, {}
        seen = bytearray(len(calls))
        for row in self.launches:
            if row >= 0:
                seen[row] = 1
        works = {name: bool(_LAUNCHES_WORK.search(name)) for name in calls.names.values}
        hidden = [row for row in compress(range(len(calls)), map(not_, seen))
                  if works[calls.names[row]]]
        hidden.sort(key=calls.ts.__getitem__)
        self.hidden_launch_times = array("d", map(calls.ts.__getitem__, hidden))
        self.hidden_launch_names = [calls.names[row] for row in hidden]
        self._hidden: dict = {}
        if not hidden or not self.devices:
            return
        device_of_thread: dict = {}
        if len(self.devices) > 1:
            counts: dict = {}
            for row, device in zip(self.launches, self.device_of):
                if row >= 0:
                    key = (calls.threads[row], device)
                    counts[key] = counts.get(key, 0) + 1
            for (thread, device), n in sorted(counts.items(), key=lambda kv: -kv[1]):
                device_of_thread.setdefault(thread, device)
        wait_starts, wait_ends = waits
        for row in hidden:
            device = (self.devices[0] if len(self.devices) == 1
                      else device_of_thread.get(calls.threads[row]))
            if device is None:
                continue
            returned = calls.ts[row] + calls.dur[row]
            first = bisect_left(wait_starts, returned)
            ends_by = wait_ends[first] if first < len(wait_ends) else self.trace_end
            self._hidden.setdefault(device, []).append((returned, max(ends_by, returned)))

    def _launches(self) -> None:
        """One match per launch call and the earliest activity it started (a CUDA graph launch
        starts many; only the first one's delay is the launch's). Activities are placed at their
        call's start: taken in order, the calls come in order of start."""
        launches, starts, table = self.launches, self.starts, self.calls
        launched = array("q", compress(range(len(launches)), map(ge, launches, repeat(0))))
        # Each call once, at its first activity, in order (a byte a call, not a dict's entry).
        seen, firsts = bytearray(len(table)), array("q")
        for i in launched:
            if not seen[launches[i]]:
                seen[launches[i]] = 1
                firsts.append(i)
        del seen
        matched = launched
        if len(firsts) < len(launched):  # calls that started several activities
            # Each call's earliest activity (the first placed of equal starts): written last.
            earliest = array("q", [-1]) * len(table)
            if len(launched) == len(launches) and self._all_by_start is not None:
                for i in reversed(self._all_by_start):  # all of them, by start already
                    earliest[launches[i]] = i
            else:
                order = stable_order(array("d", map(starts.__getitem__, launched)))[0]
                for k in reversed(order):
                    earliest[launches[launched[k]]] = launched[k]
                del order
            matched = array("q", map(earliest.__getitem__, map(launches.__getitem__, firsts)))
        del firsts, self._all_by_start
        calls = array("q", map(launches.__getitem__, matched))
        parts = pieces(calls)  # the calls in order, as a rule
        self.launch_times, self.call_durs, names = taken_all(
            [table.ts, table.dur, table.names.codes], calls, parts)
        self.call_names = table.names.with_codes(names)
        self.launch_delays = array("d", map(max, map(sub, map(sub, taken(starts, matched, None),
                                                                  self.launch_times),
                                                      self.call_durs), repeat(0.0)))

    def busy_devices(self, window: Window) -> list:
        """The devices of `busy_by_device`, in its order, busy at some time in the window: of
        a few, all of them; of many, those with a busy interval that begins before the
        window's end and ends after its start, found without a look at every device for each
        window (a trace of a device per kernel and a step per kernel). Any other device's busy
        time in the window is 0.0, which a sum may leave out unchanged."""
        if self._busy_pool is None:
            return list(self.busy_by_device)
        return self._busy_pool.overlapping(window.start, window.end)

    def idle_devices(self, kind: str, window: Window) -> list:
        """The devices of `stalled_by_device` (kind "stalled") or `unattributed_by_device`
        ("unattributed"), in its order, with such idle time in the window: as `busy_devices`,
        without a look at every device for each window where there are many."""
        by_device = self.stalled_by_device if kind == "stalled" else self.unattributed_by_device
        if len(by_device) <= _FEW_KEYS:
            return list(by_device)
        pools = self.__dict__.setdefault("_idle_pools", {})
        if kind not in pools:
            pools[kind] = _BusyPool(by_device)
        return pools[kind].overlapping(window.start, window.end)

    def placed_range(self, window: Window) -> tuple[int, int]:
        """The activities placed in the window: [lo, hi) of the activity columns."""
        return (bisect_left(self.placed_times, window.start),
                bisect_left(self.placed_times, window.end))


class _BusyPool:
    """The busy intervals of every device together, by start, each with its device's number:
    those of a window are a range of them, and those that began before it and still run in it
    are the ones of that prefix that end after its start (`LatestEnds`)."""

    def __init__(self, busy_by_device: dict):
        starts, ends, owners = array("d"), array("d"), array("i")
        for number, (device_starts, device_ends) in enumerate(busy_by_device.values()):
            starts += array("d", device_starts)
            ends += array("d", device_ends)
            owners += array("i", [number]) * len(device_starts)
        order, self.starts = stable_order(starts)
        self.owners = taken(owners, order)
        self.ends = LatestEnds(taken(ends, order))
        self.devices = list(busy_by_device)

    def overlapping(self, start: float, end: float) -> list:
        """The devices, in order, with an interval that begins before `end` and ends after
        `start`."""
        if start != start or end != end:  # NaN: no interval overlaps (nor does `covered` find one)
            return []
        starts, owners = self.starts, self.owners
        inside = range(bisect_left(starts, start), bisect_left(starts, end)) if start < end else ()
        earlier = self.ends.ending_after(0, bisect_left(starts, min(start, end)), start)
        numbers = set(map(owners.__getitem__, inside))
        numbers.update(map(owners.__getitem__, earlier))
        return [self.devices[number] for number in sorted(numbers)]


def _kernel_kinds(names: Coded, kinds: Coded, tell=kernel_kind) -> Coded:
    """compute / communication / memory / other of each activity (`kernel_kind` of its name and
    kind; or what `tell` says of them, as its work class), told once per pair of codes."""
    found = Coded()
    pairs = Coded()
    pairs.extend_pairs(names.codes, kinds.codes)
    told = [tell(names.values[name], kinds.values[kind]) for name, kind in pairs.values]
    found.extend(told)
    found.codes = taken(found.codes, pairs.codes, None)
    return found


def _at_rows(column: array, rows: array, instead) -> array:
    """`column[row]` for each of `rows`, `instead`'s value at that place where the row is -1
    (none): a column at a time, those few put after."""
    missing = list(compress(range(len(rows)), map(lt, rows, repeat(0))))
    if not missing:
        return taken(column, rows, None)
    found = taken(column, rows, None) if column else array("d", [0.0]) * len(rows)
    for i, value in zip(missing, compress(instead, map(lt, rows, repeat(0)))):
        found[i] = value
    return found


def rows_by(keys) -> dict:
    """key -> its rows, in order, as arrays (4 bytes a row, not an int object's 32); the keys
    in order of their first row. Of a Coded column of few values, a pass over its codes for
    each (C loops, not a line of Python a row); of many, one pass over the rows."""
    if isinstance(keys, Coded) and len(keys.values) <= _FEW_KEYS:
        found = {code: array("i", compress(range(len(keys)), map(code.__eq__, keys.codes)))
                 for code in set(keys.codes)}
        return {keys.values[code]: rows for code, rows in sorted(found.items(),
                                                                 key=lambda kv: kv[1][0])}
    rows: dict = {}
    for i, key in enumerate(keys):
        found = rows.get(key)
        if found is None:
            found = rows[key] = array("i")
        found.append(i)
    return rows


def grouped_by(values: array, codes) -> dict:
    """code -> the `values` (an array) at the rows of that code, in order: of few distinct
    codes a pass over them for each (C loops), of many one pass over the rows, never a pass
    over every row for each code (a trace may hold a stream or a device per kernel)."""
    distinct = set(codes)
    if len(distinct) <= _FEW_KEYS:
        return {code: array(values.typecode, compress(values, map(code.__eq__, codes)))
                for code in distinct}
    found: dict = {}
    for value, code in zip(values, codes):
        group = found.get(code)
        if group is None:
            group = found[code] = array(values.typecode)
        group.append(value)
    return found


_FEW_KEYS = 32  # the most distinct keys that `rows_by` and `grouped_by` read a key at a time


def _by_start(rows: array, starts) -> array:
    """The rows sorted by their starts, a stable sort (as `rows.sort(key=starts.__getitem__)`)."""
    order = stable_order(taken(starts, rows))[0]
    return taken(rows, order)


def kept(column, chosen):
    """The values of a column where `chosen`: an array's in an array (no float objects made)."""
    if isinstance(column, array):
        return array(column.typecode, compress(column, chosen))
    return list(compress(column, chosen))


def _host_work(trace: Trace) -> tuple[array, array]:
    """The merged intervals of host work: ops and launch calls (events or skipped times). The
    union of the ops' union and the calls: the same intervals, without a copy of the millions
    of ops (nested: their union is a fraction of them); the calls, which do not nest (as a
    rule their union is themselves), as they are, not merged twice. In arrays (a trace has
    hundreds of thousands of them)."""
    starts, ends = array("d"), array("d")
    for kind in sorted(HOST_WORK_KINDS):
        ts, dur = trace.time_columns(kind)
        if kind in LAUNCH_KINDS:
            starts += ts
            ends += array("d", map(add, ts, dur))
            continue
        merged = union_of_spans(ts, dur)
        starts += merged[0]
        ends += merged[1]
        del merged
    # Sorted here, each copy given up as its sorted one is made (the union finds them sorted,
    # and each interval nonempty: it makes no copies of its own).
    starts = sorted_values(starts)
    ends = sorted_values(ends)
    return union_of_arrays(starts, ends, in_order=True)


def _host_waits(trace: Trace) -> Merged:
    """The merged intervals of the launch-API calls that block until the GPU catches up."""
    calls = launch_table(trace)
    waiting = {name: bool(_HOST_WAIT_CALL.search(name)) for name in calls.names.values}
    rows = list(compress(range(len(calls)), map(waiting.__getitem__, calls.names)))
    starts = list(map(calls.ts.__getitem__, rows))
    return union_of_times(starts, list(map(add, starts, map(calls.dur.__getitem__, rows))))

"""What a frozen artifact may say about the machine that made it.

A trace, a table or a refusal reason written on the GPU machine is published, so the rules say what
may stay rather than what must go:

- a path is kept only relative to a root that names nothing of the machine: a package root
  (`.../site-packages/torch/nn/modules/module.py` -> `torch/nn/modules/module.py`), Python's standard
  library (`<python>/enum.py`), the repository (`snippets/x.py`) or the run's own directory; every
  other absolute path (POSIX of any root, Windows, UNC) becomes `<path>`, keeping no directory name;
- a Python frame is kept only as `<relative path>(<line>): <function>`;
- URLs, e-mail addresses, IP addresses (v4 and v6), device UUIDs and `~user` become placeholders;
- the machine's own host and user names become `<host>` and `<user>` wherever they stand as a token,
  in any case and however short (Kineto names its workers `<host>_<pid>`);
- keys that name the machine (`host_name`, `hostname`, ...) are dropped wherever they are.

`Scrubber.leaks` runs the same detectors over the result, so what a rule misses fails the refresh.
Kernel and op names, shapes, numbers and versions match none of them and pass unchanged.

Standard library only: the GPU refresh imports it.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
import site
import socket
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

PLACEHOLDERS = ("<path>", "<python>", "<url>", "<email>", "<ip>", "<uuid>", "<host>", "<user>")

# Keys whose values name the machine, compared lowercased with '-' read as '_'; dropped at any depth.
MACHINE_KEYS = frozenset({
    "host", "host_name", "hostname", "hostnames", "node", "node_name", "nodename", "machine",
    "user", "user_name", "username", "login", "trace_id", "uuid", "device_uuid", "gpu_uuid",
    "ip", "ip_address", "addr", "address", "master_addr", "mac", "mac_address", "fqdn",
})

# What ends a path inside running text.
_END = r"\s\"'<>|;,()\[\]{}"
# An absolute path. A '/' right after a word, a dot, '~', '>' or another separator is not the start
# of one: `0/0`, `GB/s`, `./x`, `~/x`, `<python>/x` are not absolute; nor is a URL's `://`.
POSIX_PATH = re.compile(rf"(?<![\w.~/\\>-])(?!(?<=:)//)/[^{_END}]+")
WINDOWS_PATH = re.compile(rf"(?<![\w])[A-Za-z]:[\\/][^{_END}]*")
UNC_PATH = re.compile(rf"(?<![\w\\])\\\\[^{_END}\\]+\\[^{_END}]*")
URL = re.compile(r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]*")
EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*")
# NVIDIA names devices GPU-<uuid> and MIG-<uuid>; a bare UUID is as identifying.
UUID = re.compile(r"(?<![0-9A-Za-z-])(?:MIG-)?(?:GPU-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                  r"(?![0-9A-Za-z-])", re.I)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
# Four octets standing alone: `2.11.0`, `12.4` and `580.159.04` have fewer (or a leading zero).
IPV4 = re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?![\w+-]|\.\d)")
# A candidate; `_is_ipv6` decides (C++ names like `c10::add` are valid IPv6 syntax).
IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:.])")
# `~alice`, not a C++ destructor (`~TensorImpl()`, `c10::~Storage`).
TILDE_USER = re.compile(r"(?<![\w~/\\:])~[A-Za-z_][\w.-]*(?![\w.(<-])")
# A Python frame as torch's tracer names it: `torch/nn/modules/module.py(1751): _call_impl`.
FRAME = re.compile(r"(?P<file>[^\n]+?)\((?P<line>\d+)\): (?P<func>[^\n]*)")
SAFE_SOURCE = re.compile(r"(?:<python>/)?[\w.+-]+(?:/[\w.+-]+)*|<[\w .-]+>")
SAFE_FUNCTION = re.compile(r"[\w.<>]+")
# Where a package tree or the standard library starts, in a path from any machine.
_PACKAGES = re.compile(r".*/(?:site|dist)-packages/(?=.)", re.I)
_STDLIB = re.compile(r".*/(?:lib|lib64)/(?:python|pypy)\d+(?:\.\d+)?t?/(?=.)|^[A-Za-z]:/.*?/Lib/(?=.)", re.I)


def _is_ipv6(text: str) -> bool:
    groups = [g for g in text.split(":") if g]
    if len(groups) < 2 or sum(any(c.isdigit() for c in g) for g in groups) < 2:
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def reduce_path(path: str, roots: tuple[tuple[str, str], ...] = ()) -> str | None:
    """An absolute path as a path relative to a known root, or None if it has none."""
    for root, replacement in roots:
        if path == root or path.startswith(root + "/"):
            rest = path[len(root) + 1:]
            return "/".join(p for p in (replacement, rest) if p) or "."
    posix = path.replace("\\", "/")
    if m := _PACKAGES.match(posix):
        return posix[m.end():]
    if m := _STDLIB.match(posix):
        return "<python>/" + posix[m.end():]
    return None


@dataclass(frozen=True)
class Scrubber:
    """Rewrites strings so that they name no place, host, user, address or device of the machine."""

    # Absolute directories and what a path under them becomes: "" (relative to it) or "<python>".
    roots: tuple[tuple[str, str], ...] = ()
    hosts: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    _names: re.Pattern | None = field(default=None, init=False, repr=False, compare=False)
    _roots: re.Pattern | None = field(default=None, init=False, repr=False, compare=False)
    _hosts: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self):
        # Longest first, so that a path is cut at its most specific root; the first of equals wins.
        roots: dict[str, str] = {}
        for root, replacement in self.roots:
            if len(root.rstrip("/")) > 1:
                roots.setdefault(root.rstrip("/"), replacement)
        object.__setattr__(self, "roots", tuple(sorted(roots.items(), key=lambda r: -len(r[0]))))
        if roots:
            # A root ends where the path does or at a separator: /home/alice is not /home/alice-old.
            alternation = "|".join(re.escape(r) for r, _ in self.roots)
            object.__setattr__(self, "_roots", re.compile(
                rf"(?<![\w.~/\\-])(?:{alternation})(?=[/\\{_END}]|$)[^{_END}]*"))
        object.__setattr__(self, "_hosts", frozenset(h.lower() for h in self.hosts))
        words = sorted({w for w in (*self.hosts, *self.users) if _usable_name(w)}, key=len, reverse=True)
        if words:
            alternation = "|".join(map(re.escape, words))
            object.__setattr__(self, "_names", re.compile(
                rf"(?<![A-Za-z0-9])(?:{alternation})(?![A-Za-z0-9])", re.I))

    @classmethod
    def for_this_machine(cls, *run_dirs: Path) -> Scrubber:
        from .catalog import ROOT

        roots = [(str(d), "") for d in run_dirs] + [(str(ROOT), "")]
        roots += [(d, "") for d in _package_dirs()]
        roots += [(d, "<python>") for d in _stdlib_dirs()]
        return cls(tuple(roots), _host_names(), _user_names())

    # --- rewriting ----------------------------------------------------------------------------

    def scrub(self, text: str) -> str:
        frame = FRAME.fullmatch(text)
        if frame and _looks_like_source(frame["file"]):
            return self._names_out(f"{self._source(frame['file'])}({frame['line']}): {self._function(frame['func'])}")
        return self._text(text)

    def _source(self, file: str) -> str:
        if SAFE_SOURCE.fullmatch(file):
            return file
        if _absolute(file):
            reduced = reduce_path(file, self.roots)
            if reduced is not None and SAFE_SOURCE.fullmatch(reduced):
                return reduced
        return "<path>"

    def _function(self, func: str) -> str:
        return func if SAFE_FUNCTION.fullmatch(func) else self._text(func)

    def _text(self, text: str) -> str:
        text = URL.sub("<url>", text)
        text = EMAIL.sub("<email>", text)
        text = UUID.sub("<uuid>", text)
        if self._roots is not None:
            text = self._roots.sub(lambda m: reduce_path(m.group(0), self.roots) or "<path>", text)
        for pattern in (POSIX_PATH, WINDOWS_PATH, UNC_PATH):
            text = pattern.sub(lambda m: reduce_path(m.group(0)) or "<path>", text)
        text = IPV6.sub(lambda m: "<ip>" if _is_ipv6(m.group(0)) else m.group(0), text)
        text = IPV4.sub("<ip>", text)
        text = TILDE_USER.sub("~<user>", text)
        return self._names_out(text)

    def _names_out(self, text: str) -> str:
        if self._names is None:
            return text
        return self._names.sub(lambda m: "<host>" if m.group(0).lower() in self._hosts else "<user>", text)

    # --- checking -----------------------------------------------------------------------------

    def leak(self, text: str) -> str | None:
        """What in text still names the machine, by the same detectors the rewriting uses."""
        frame = FRAME.fullmatch(text)
        if frame and _looks_like_source(frame["file"]) and not SAFE_SOURCE.fullmatch(frame["file"]):
            return "a frame with an absolute path"
        for placeholder in PLACEHOLDERS:  # as a word character, so that `<python>/x` stays relative
            text = text.replace(placeholder, "0")
        for kind, pattern in (("a URL", URL), ("an e-mail address", EMAIL), ("a device UUID", UUID),
                              ("an absolute path", POSIX_PATH), ("a Windows path", WINDOWS_PATH),
                              ("a UNC path", UNC_PATH), ("an IPv4 address", IPV4), ("~user", TILDE_USER)):
            if pattern.search(text):
                return kind
        if any(_is_ipv6(m.group(0)) for m in IPV6.finditer(text)):
            return "an IPv6 address"
        if self._names is not None and self._names.search(text):
            return "the host or user name"
        return None

    def leaks(self, obj, number_keys: frozenset[str] = frozenset()) -> list[str]:
        """Strings in obj that still name the machine (a dropped key counts too, unless it is one
        of number_keys holding a number, as sanitize_value keeps it), each with why."""
        # Each distinct string is judged once (a trace repeats a few hundred strings millions of
        # times); only when one leaks are its occurrences listed.
        verdicts = {pair: self._verdict(*pair) for pair in _distinct_strings(obj, number_keys)}
        if not any(verdicts.values()):
            return []
        return [f"{text} ({verdicts[text, is_key]})" for text, is_key in _strings(obj, number_keys=number_keys)
                if verdicts[text, is_key]]

    def _verdict(self, text: str, is_key: bool) -> str | None:
        return "a key that names the machine" if is_key and _machine_key(text) else self.leak(text)


# A profile_memory trace's `[memory]` events pair an allocation with its free by `Addr`, a number.
TRACE_NUMBER_KEYS = frozenset({"Addr"})


def sanitize_trace(data: dict, file_name: str, scrubber: Scrubber) -> dict:
    """The trace with every machine-identifying string rewritten and every such key dropped."""
    clean = dict(data)
    clean["traceName"] = file_name
    return sanitize_value(clean, scrubber, TRACE_NUMBER_KEYS)


def sanitize_value(data, scrubber: Scrubber, number_keys: frozenset[str] = frozenset()):
    """Plain data (dicts, lists, strings, numbers) with every machine-identifying string rewritten
    and every such key dropped, except the number_keys whose value is a number: memory addresses
    (an allocation paired with its free, a segment placed), which name no machine."""
    memo: dict[str, str] = {}  # a trace repeats a few thousand names a million times

    def scrub(text: str) -> str:
        if text not in memo:
            memo[text] = scrubber.scrub(text)
        return memo[text]

    def walk(obj):
        if isinstance(obj, str):
            return scrub(obj)
        if isinstance(obj, dict):
            return {scrub(k): walk(v) for k, v in obj.items() if not _machine_key(k)
                    or (k in number_keys and _number(v))}
        if isinstance(obj, list):
            return [walk(v) for v in obj]
        return obj

    return walk(data)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- the machine ------------------------------------------------------------------------------


def _usable_name(word: str) -> bool:
    """A name worth matching: two characters or more and not a number (a host named `17` would
    erase every 17 of a trace); placeholders' own words are left alone."""
    return len(word) >= 2 and not word.isdigit() and f"<{word.lower()}>" not in PLACEHOLDERS


def _machine_key(key: str) -> bool:
    return key.lower().replace("-", "_") in MACHINE_KEYS


def _host_names() -> tuple[str, ...]:
    names = set()
    try:
        full = socket.gethostname()
    except OSError:
        full = ""
    for name in (full, os.environ.get("HOSTNAME", "")):
        if name:
            names.update({name, name.split(".")[0]})
    return tuple(sorted(names))


def _user_names() -> tuple[str, ...]:
    names = {os.environ.get(var, "") for var in ("USER", "LOGNAME", "USERNAME", "SUDO_USER")}
    try:
        names.add(getpass.getuser())
    except (KeyError, OSError):
        pass
    try:
        names.add(Path.home().name)
    except (KeyError, RuntimeError):
        pass
    return tuple(sorted(n for n in names if n))


def _package_dirs() -> set[str]:
    dirs = {p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))}
    dirs |= {sysconfig.get_paths().get(k, "") for k in ("purelib", "platlib")}
    try:
        dirs |= set(site.getsitepackages()) | {site.getusersitepackages()}
    except AttributeError:  # a virtualenv's old site.py
        pass
    return {d for d in dirs if d}


def _stdlib_dirs() -> set[str]:
    return {d for d in (sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib")) if d}


def _absolute(path: str) -> bool:
    return path.startswith(("/", "\\\\")) or bool(re.match(r"[A-Za-z]:[\\/]", path))


def _looks_like_source(file: str) -> bool:
    return file.endswith((".py", ".pyc", ">")) or "/" in file or "\\" in file


def _distinct_strings(obj, number_keys: frozenset[str] = frozenset()) -> set[tuple[str, bool]]:
    """The pairs `_strings` yields, each once, without a generator per level (a trace's million
    strings)."""
    values: set[str] = set()
    keys: set[str] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if type(item) is dict or isinstance(item, dict):
            if number_keys.isdisjoint(item):
                keys.update(item)
            else:  # a number under one of number_keys: its key is a plain string, as in _strings
                for key, value in item.items():
                    (values if key in number_keys and _number(value) else keys).add(key)
            item = item.values()
        elif not isinstance(item, list):
            if isinstance(item, str):
                values.add(item)
            continue
        for value in item:
            if type(value) is str:
                values.add(value)
            elif isinstance(value, (dict, list, str)):  # a str subclass is added when popped
                stack.append(value)
    return {(text, False) for text in values} | {(key, True) for key in keys if isinstance(key, str)}


def _strings(obj, is_key: bool = False, number_keys: frozenset[str] = frozenset()):
    """Every string in obj, with whether it is a key (a key of number_keys holding a number is
    not a key that names the machine: it is yielded as a plain string)."""
    if isinstance(obj, str):
        yield obj, is_key
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _strings(key, not (key in number_keys and _number(value)))
            yield from _strings(value, number_keys=number_keys)
    elif isinstance(obj, list):
        for item in obj:
            yield from _strings(item, number_keys=number_keys)

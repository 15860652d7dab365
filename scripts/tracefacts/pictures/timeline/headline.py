"""The timeline's headline: one line of the analyzer's facts ('GPU busy 97.4% of the window ·
GPU-bound') for the picture's header, read defensively from whatever facts object it is given,
so that a change in the facts' shape shortens the line and never costs the picture.
"""

from __future__ import annotations

import dataclasses

from .style import clean_text


def facts_headline(facts, window_label: str = "") -> str:
    """One line such as 'GPU busy 97.4% of the window · GPU-bound' from the analyzer's facts
    ('' without): the GPU busy share of the window, as the facts box gives it, and the verdict
    made of it.

    The facts object (a dataclass with `to_dict()`, or a dict) is read defensively: missing or
    renamed fields only shorten the line. Of its windows (`window`, `steps`), the one labelled
    like the picture's is used; another one is named in the line."""
    scope = _facts_of_window(_facts_dict(facts), window_label)
    figures = []
    busy = scope.get("window_busy_pct")
    if isinstance(busy, (int, float)) and not isinstance(busy, bool):
        figures.append(f"GPU busy {busy:.1f}% of the window")
    verdict = _find_value(scope, ("verdict",))
    if isinstance(verdict, dict):
        verdict = next(
            (verdict[k] for k in ("label", "name", "verdict", "kind") if isinstance(verdict.get(k), str)),
            None,
        )
    if isinstance(verdict, str) and verdict:
        figures.append(clean_text(verdict))
    line = " · ".join(figures)
    scope_label = scope.get("label")
    if line and isinstance(scope_label, str) and scope_label and scope_label != window_label:
        line = f"{clean_text(scope_label)}: {line}"
    return line


def _facts_of_window(data: dict, window_label: str) -> dict:
    """The part of the facts that describes the window labelled `window_label`; else the facts'
    own main window; else all of them."""
    windows = [data.get("window")] + list(data.get("steps") or [])
    windows = [w for w in windows if isinstance(w, dict)]
    for candidate in windows:
        if window_label and candidate.get("label") == window_label:
            return candidate
    return windows[0] if windows else data


def _facts_dict(facts) -> dict:
    if facts is None:
        return {}
    if isinstance(facts, dict):
        return facts
    try:
        if hasattr(facts, "to_dict"):
            data = facts.to_dict()
        elif dataclasses.is_dataclass(facts):
            data = dataclasses.asdict(facts)
        else:
            data = vars(facts)
    except (TypeError, ValueError, AttributeError):  # an API in flux must not cost the picture
        return {}
    return data if isinstance(data, dict) else {}


def _find_value(data: dict, keys: tuple[str, ...]):
    """The first of `keys` found, breadth-first: top-level values win over per-step ones."""
    level = [data]
    while level:
        for key in keys:
            for node in level:
                if key in node and node[key] is not None:
                    return node[key]
        level = [v for node in level for v in node.values() if isinstance(v, dict)]
    return None

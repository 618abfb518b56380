"""A workload or a trace said as plain JSON-able data: what run.json records and what
the scorecard prints beside every figure measured under it ("which workload"). Pure: no
I/O, nothing drawn.
"""

from __future__ import annotations

import dataclasses

from evalkit.workload.model import Conversations, Dist, Shape, Trace, Workload


def dist_summary(d: Dist) -> dict[str, object]:
    """A distribution's form, its short human text and its mean."""
    return {"kind": d.kind, "describe": d.describe(), "mean": round(d.mean(), 6)}


def shape_summary(shape: Shape, total_weight: float) -> dict[str, object]:
    """One shape: kind, weight and share of the mix, and each length or pause it draws."""
    out: dict[str, object] = {"name": shape.name, "kind": shape.kind, "weight": shape.weight,
                           "share": shape.weight / total_weight if total_weight > 0 else 0.0}
    for f in dataclasses.fields(shape):
        value = getattr(shape, f.name)
        if isinstance(value, Dist):
            out[f.name] = dist_summary(value)
        elif f.name == "system_prompt_tokens":
            out[f.name] = value
    if isinstance(shape, Conversations):
        out["conversations"] = len(shape.conversations)
        out["user_turns"] = sum(c.user_turns() for c in shape.conversations)
        out["source"] = dict(shape.source) if shape.source else None
    return out


def workload_summary(w: Workload) -> dict[str, object]:
    """The workload as run.json keeps it: name, source, levels and the shapes' mix."""
    total = sum(s.weight for s in w.shapes)
    return {"name": w.name, "source": dict(w.source) if w.source else None,
            "concurrency": list(w.concurrency), "duration_s": w.duration_s, "units": w.units,
            "shapes": [shape_summary(s, total) for s in w.shapes]}


def trace_summary(t: Trace) -> dict[str, object]:
    """A trace as run.json keeps it: source, size, speed, span and mean lengths."""
    n = len(t.entries)
    offsets = t.offsets_s()
    return {"source": dict(t.source) if t.source else None, "entries": n, "speed": t.speed,
            "block_tokens": t.block_tokens,
            "replay_s": offsets[-1] if offsets else 0.0,
            "input_tokens_mean": sum(e.input_length for e in t.entries) / n if n else 0.0,
            "output_tokens_mean": sum(e.output_length for e in t.entries) / n if n else 0.0,
            "with_hash_ids": sum(1 for e in t.entries if e.hash_ids)}

#!/usr/bin/env python3
"""dag-check.py - checks a DAG replay's request lines against its traces,
worked out here from the trace files alone (not from atr's code).

  dag-check.py order TRACES REQUESTS SCALE [exact] [serial]
      every llm turn was sent no earlier than each parent turn's end plus
      the recorded tool time after that parent (times SCALE); with exact,
      at that time (a simulator: nothing else waits); some turns of one
      session overlapped (branches ran at once), or with serial none did
      (sub-agents the parent waits for, as OpenHands delegates)
  dag-check.py figures TRACES REQUESTS RESULT [TOL]
      the result's sessions critical path and parallelism are those of the
      request lines (within TOL relative, default 1e-6: the lines keep 9 decimals)

A turn's parents are the nearest llm steps above it in the graph (tool
steps in between add their time); "parents" absent means the step before.
"""
import json
import sys


def turns_of(path):
    """{trace_id: [(parents {turn: tool_ms}), ...] per llm turn}."""
    out = {}
    for line in open(path):
        t = json.loads(line)
        steps = t["steps"]
        up = []       # per step: {turn: longest tool ms from it}
        turns = []
        for k, s in enumerate(steps):
            par = s.get("parents", [k - 1] if k else [])
            inh = {}
            for p in par:
                for u, ms in up[p].items():
                    inh[u] = max(inh.get(u, 0), ms)
            if s["kind"] == "llm" and s.get("input_tokens", 0) > 0:
                turns.append(inh)
                up.append({len(turns) - 1: 0})
            else:
                d = s.get("dur_ms", 0) if s["kind"] == "tool" else 0
                up.append({u: ms + max(d, 0) for u, ms in inh.items()})
        out[t.get("trace_id", "")] = turns
    return out


def reqs_of(path):
    by = {}
    for line in open(path):
        r = json.loads(line)
        by.setdefault(r["trace_id"], {})[r["turn"]] = r
    return by


def order(traces, reqs, scale, exact, serial):
    overlap = False
    for tid, turns in turns_of(traces).items():
        rs = reqs[tid]
        assert len(rs) == len(turns), (tid, len(rs), len(turns))
        for k, par in enumerate(turns):
            if not par:
                continue
            due = max(rs[p]["end_s"] + ms / 1000 * scale for p, ms in par.items())
            sent = rs[k]["send_s"]
            assert sent >= due - 1e-6, (tid, k, sent, due)
            if exact:
                assert abs(sent - due) <= 1e-6, (tid, k, sent, due)
        spans = sorted((r["send_s"], r["end_s"]) for r in rs.values())
        overlap |= any(b[0] < a[1] - 1e-9 for a, b in zip(spans, spans[1:]))
    if serial:
        assert not overlap, "two turns of a serial session overlapped"
    else:
        assert overlap, "no two turns of a session overlapped"


def figures(traces, reqs, result, tol):
    cps, pars = [], []
    for tid, turns in turns_of(traces).items():
        rs = reqs[tid]
        if not all(r["success"] for r in rs.values()):
            continue
        cp = {}
        for k, par in enumerate(turns):
            own = rs[k]["end_s"] - rs[k]["send_s"]
            cp[k] = own + max((cp[p] for p in par), default=0)
        cps.append(max(cp.values()) * 1000)
        model = sum(r["end_s"] - r["send_s"] for r in rs.values())
        wall = max(r["end_s"] for r in rs.values()) - min(r["send_s"] for r in rs.values())
        pars.append(model / wall)
    s = json.load(open(result))["atr"]["sessions"]
    for got, want, name in ((s["mean_critical_path_ms"], sum(cps) / len(cps), "critical path"),
                            (s["parallelism"]["mean"], sum(pars) / len(pars), "parallelism")):
        assert abs(got - want) <= tol * abs(want), (name, got, want)


def main():
    mode = sys.argv[1]
    if mode == "order":
        order(sys.argv[2], reqs_of(sys.argv[3]), float(sys.argv[4]),
              "exact" in sys.argv[5:], "serial" in sys.argv[5:])
    elif mode == "figures":
        figures(sys.argv[2], reqs_of(sys.argv[3]), sys.argv[4],
                float(sys.argv[5]) if len(sys.argv) > 5 else 1e-6)
    else:
        sys.exit("unknown mode " + mode)


main()

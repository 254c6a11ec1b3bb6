"""digest.py DIR < BLOCK - the same-results.sh digest of one case's outputs: the
printed block's lines, every result JSON flattened to `path = value` lines,
and per NDJSON output a sha256 over its integer and string fields plus
order-weighted sums of its float fields (lines starting "~", compared to
1e-9 relative by check.py). Values, not bytes: the NDJSON writers may change
their float spelling (fewer digits) or add fields without touching the
digest; a changed figure still shows.

check.py GOLDEN DIGEST: every golden line must be in the digest (lines may
be added, never changed), "~" lines within their tolerance."""
import hashlib
import json
import os
import sys

# Fields pinned exactly (integers, strings, booleans) and by sums (floats).
EXACT = ["id", "trace_id", "turn", "success", "error", "prompt_tokens", "output_tokens",
         "cached_tokens", "i", "seqs", "prefill_tokens", "decode_seqs", "kv_blocks"]
SUMS = ["scheduled_s", "send_s", "start_s", "end_s", "schedule_lag_ms", "queue_ms",
        "ttft_ms", "tpot_ms", "e2el_ms", "itl_ms", "dur_ms"]


def flat(prefix, v, out):
    if isinstance(v, dict):
        for k in v:
            flat(prefix + "." + k, v[k], out)
    else:
        out.append("%s = %r" % (prefix, v))


def ndjson_digest(name, path, out):
    h = hashlib.sha256()
    sums = {}
    n = 0
    with open(path) as f:
        for n, line in enumerate(f, 1):
            r = json.loads(line)
            itl = r.get("itl_ms")
            h.update(repr([r.get(k) for k in EXACT] + [len(itl) if itl is not None else None])
                     .encode())
            for k in SUMS:
                v = r.get(k)
                if isinstance(v, list):
                    v = sum(v)
                if isinstance(v, (int, float)):
                    a = sums.setdefault(k, [0.0, 0.0])
                    a[0] += v
                    a[1] += v * (n % 97 + 1)     # order matters
    out.append("%s: %d lines, sha256 %s" % (name, n, h.hexdigest()))
    for k in sorted(sums):
        out.append("~ %s: sum %s = %r" % (name, k, sums[k][0]))
        out.append("~ %s: weighted sum %s = %r" % (name, k, sums[k][1]))


def main():
    d = sys.argv[1]
    out = ["block: " + l.rstrip() for l in sys.stdin if l.strip()]
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if name.endswith(".json"):
            with open(p) as f:
                r = json.load(f)
            r.pop("date", None)
            flat(name, r, out)
        elif name.endswith(".ndjson"):
            ndjson_digest(name, p, out)
    print("\n".join(out))


main()

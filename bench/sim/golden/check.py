"""check.py GOLDEN DIGEST - prints the golden lines the digest lacks (see
digest.py); exit 1 when there is one. "~ KEY = V" lines match a digest line
with the same KEY whose value is within 1e-9 relative of V."""
import sys

golden = [l.rstrip("\n") for l in open(sys.argv[1])]
digest = [l.rstrip("\n") for l in open(sys.argv[2])]
have = set(digest)
approx = {}
for l in digest:
    if l.startswith("~ "):
        k, _, v = l.rpartition(" = ")
        approx[k] = float(v)
bad = []
for l in golden:
    if l.startswith("~ "):
        k, _, v = l.rpartition(" = ")
        want = float(v)
        got = approx.get(k)
        if got is None or abs(got - want) > 1e-9 * max(abs(want), 1.0):
            bad.append("%s (got %r)" % (l, got))
    elif l not in have:
        bad.append(l)
print("\n".join(bad[:20]))
sys.exit(1 if bad else 0)

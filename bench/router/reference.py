#!/usr/bin/env python3
"""reference.py MODEL.json FEATURES - the learned router's forward pass in
pure Python (no numpy), as a user would write it: standardise, dense layers
with ReLU, argmax. Times it over the feature vectors decide.c wrote (each
line: 12 features and the C prediction), checks that the predictions agree
with C, and prints "N ns_per_forward mismatches"."""
import json
import sys
import time

model = json.load(open(sys.argv[1]))
rows = []
for line in open(sys.argv[2]):
    v = line.split()
    rows.append(([float(a) for a in v[:-1]], int(v[-1])))
mean, std = model["mean"], model["std"]
layers = [(l["in"], l["out"], l["weights"], l["bias"]) for l in model["layers"]]


def predict(x):
    a = [(xi - m) / s for xi, m, s in zip(x, mean, std)]
    for k, (n_in, n_out, w, b) in enumerate(layers):
        z = [b[o] + sum(w[o * n_in + i] * a[i] for i in range(n_in)) for o in range(n_out)]
        a = z if k == len(layers) - 1 else [v if v > 0 else 0.0 for v in z]
    return max(range(len(a)), key=lambda i: (a[i], -i))


reps = max(1, 20000 // max(1, len(rows)))
t0 = time.perf_counter()
bad = 0
for _ in range(reps):
    for x, want in rows:
        bad += predict(x) != want
n = reps * len(rows)
print(n, "%.1f" % (1e9 * (time.perf_counter() - t0) / n), bad // reps)

#!/usr/bin/env python3
"""gpu-step.py - time the GPU side of one engine iteration on a real GPU,
to check the GPU term of atr's cost model (docs/sim.md, "Cost of one
iteration") apart from any engine's CPU work.

Runs a plain PyTorch Llama-style decoder (random bf16 weights of a model's
shape: RMSNorm, fused QKV, grouped-query attention through
scaled_dot_product_attention, SiLU MLP, the output head on the sequences'
last tokens, greedy sampling) and times on CUDA events:

  decode   one token for B sequences with C tokens of context each,
           replayed from a CUDA graph (C = 512: B = 1, 16, 64, 128, 256;
           C = 2048: B = 64), and eager at B = 1
  prefill  one sequence's chunk of T new tokens (T = 512, 2048, 8192), eager

Every model is run twice and the second pass printed: the first warms
the GPU's clocks, cuBLAS and the attention kernels.

It needs a GPU and PyTorch, never runs in the tests, and prints one JSON
line per figure (model, what, batch or tokens, ms). Compare with the
simulator's GPU term: `sh bench/sim-fidelity/gpu-compare.sh ATR FILE`.
It is not vLLM: no fused rotary or KV-write kernels, no paged attention,
so its per-layer floor bounds vLLM's from above rather than equals it.

usage: python3 gpu-step.py [MODEL...]   (default: all of SHAPES)
"""
import json
import sys

import torch
import torch.nn.functional as F

# layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, tied
# (the models' config.json; profiles/models/ has all but intermediate)
SHAPES = {
    "qwen3-0.6b": (28, 1024, 16, 8, 128, 3072, 151936, True),
    "llama-3.2-1b": (16, 2048, 32, 8, 64, 8192, 128256, True),
    "qwen2.5-1.5b": (28, 1536, 12, 2, 128, 8960, 151936, True),
    "qwen3-1.7b": (28, 2048, 16, 8, 128, 6144, 151936, True),
    "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336, 128256, False),
}
DECODES = [(1, 512), (16, 512), (64, 512), (128, 512), (256, 512), (64, 2048)]
PREFILLS = [512, 2048, 8192]
DEV, DT = "cuda", torch.bfloat16


class Model:
    def __init__(self, shape):
        L, H, nh, nkv, hd, ffn, V, tied = shape
        self.H, self.nh, self.nkv, self.hd = H, nh, nkv, hd

        def w(*size):
            return torch.randn(*size, device=DEV, dtype=DT) * 0.02

        self.layers = [dict(qkv=w((nh + 2 * nkv) * hd, H), o=w(H, nh * hd),
                            gu=w(2 * ffn, H), down=w(H, ffn),
                            n1=torch.ones(H, device=DEV, dtype=DT),
                            n2=torch.ones(H, device=DEV, dtype=DT)) for _ in range(L)]
        self.head = w(V, H)
        self.emb = self.head if tied else w(V, H)
        self.norm = torch.ones(H, device=DEV, dtype=DT)
        self.body = sum(t.numel() for l in self.layers for k, t in l.items() if k[0] != "n")

    def mlp(self, l, x):
        g, u = (F.rms_norm(x, (self.H,), l["n2"]) @ l["gu"].T).chunk(2, dim=-1)
        return x + (F.silu(g) * u) @ l["down"].T

    def decode(self, ids, kc, vc):
        """One token for each of B sequences; its KV goes to the last slot."""
        B, nh, nkv, hd = ids.shape[0], self.nh, self.nkv, self.hd
        last = kc[0].shape[2] - 1
        x = self.emb[ids]
        for i, l in enumerate(self.layers):
            qkv = F.rms_norm(x, (self.H,), l["n1"]) @ l["qkv"].T
            q, k, v = qkv.split([nh * hd, nkv * hd, nkv * hd], dim=-1)
            q = q * 1.0001                      # stands in for the rotary kernel
            kc[i][:, :, last] = k.view(B, nkv, hd)
            vc[i][:, :, last] = v.view(B, nkv, hd)
            # grouped-query decode: each KV head's query group as a query length
            a = F.scaled_dot_product_attention(q.view(B, nkv, nh // nkv, hd), kc[i], vc[i])
            x = x + a.reshape(B, nh * hd) @ l["o"].T
            x = self.mlp(l, x)
        return (F.rms_norm(x, (self.H,), self.norm) @ self.head.T).argmax(-1)

    def prefill(self, ids):
        """A chunk of T tokens of one sequence, causal; logits of the last."""
        T, nh, nkv, hd = ids.shape[0], self.nh, self.nkv, self.hd
        x = self.emb[ids]
        for l in self.layers:
            qkv = F.rms_norm(x, (self.H,), l["n1"]) @ l["qkv"].T
            q, k, v = qkv.split([nh * hd, nkv * hd, nkv * hd], dim=-1)
            q = q.view(T, nh, hd).transpose(0, 1).unsqueeze(0)
            k = k.view(T, nkv, hd).transpose(0, 1).repeat_interleave(nh // nkv, 0).unsqueeze(0)
            v = v.view(T, nkv, hd).transpose(0, 1).repeat_interleave(nh // nkv, 0).unsqueeze(0)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + a.squeeze(0).transpose(0, 1).reshape(T, nh * hd) @ l["o"].T
            x = self.mlp(l, x)
        return (F.rms_norm(x[-1:], (self.H,), self.norm) @ self.head.T).argmax(-1)


def timed(fn, warm, reps):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(reps):
        fn()
    t1.record()
    torch.cuda.synchronize()
    return t0.elapsed_time(t1) / reps


def graphed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def measure(m):
    """(what, batch or tokens, context, ms) of every figure."""
    L, nkv, hd = len(m.layers), m.nkv, m.hd
    out = []
    with torch.inference_mode():
        for B, C in DECODES:
            kc = [torch.randn(B, nkv, C, hd, device=DEV, dtype=DT) for _ in range(L)]
            vc = [torch.randn(B, nkv, C, hd, device=DEV, dtype=DT) for _ in range(L)]
            ids = torch.randint(0, 1000, (B,), device=DEV)
            step = lambda: m.decode(ids, kc, vc)     # noqa: E731
            if B == 1:
                out.append(("decode-eager", B, C, timed(step, 5, 30)))
            out.append(("decode-graph", B, C, timed(graphed(step), 5, 100)))
            del kc, vc
            torch.cuda.empty_cache()
        for T in PREFILLS:
            ids = torch.randint(0, 1000, (T,), device=DEV)
            out.append(("prefill", T, 0, timed(lambda: m.prefill(ids), 2, 5)))
    return out


def run(name):
    m = Model(SHAPES[name])
    measure(m)                                       # the warm-up pass
    for what, n, ctx, ms in measure(m):
        rec = {"model": name, "what": what, "n": n, "ctx": ctx, "ms": round(ms, 4)}
        if what == "prefill":
            rec["body_tflops"] = round(2 * m.body * n / (ms / 1e3) / 1e12, 1)
        print(json.dumps(rec), flush=True)
    del m
    torch.cuda.empty_cache()


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}),
          flush=True)
    for name in sys.argv[1:] or list(SHAPES):
        run(name)

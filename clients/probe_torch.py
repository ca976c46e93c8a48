#!/usr/bin/env python3
"""clients/probe_torch.py: what cuBLAS's GEMM really sums, probed through PyTorch on a CUDA
device (docs/probe.md; the method of `assay probe`, FPRev and MMA-Sim, written from their
descriptions in docs/numerics.md 6a).

Prints one JSON line per probe and exits 0 (or {"ok": false, "reason": ...} without torch
or a GPU):
  tree        bf16 A (P x K) times ones (K x 64), bf16 out: row p holds the FPRev probe of one
              pair (i, j) of the K summands (ones, +M at i, -M at j, M = 2^100); K - out is
              the number of leaves under their lowest common ancestor; the tree is rebuilt
              bottom-up and printed with its widest node (a fused multi-way block) and depth
  fraction    f32 inputs with TF32 tensor cores (allow_tf32) and f32 out: the products 1,
              2^-k and -1 in one dot product: 2^-k survives while it lies within the unit's
              fraction bits of the block's largest exponent; the largest surviving k
  rounding    the same unit: 1 + 2^-24 + 2^-25 (1.5 half-ulps of f32 above 1): 1 + 2^-23
              when the f32 result is rounded to nearest, 1 when it is truncated toward zero
Every probe's exact answer is known (a sum of small integers and powers of two), so the
figures are the unit's, not the inputs'.
"""
import json
import sys


def tree_of(k, lca):
    """The tree of LCA leaf counts lca[(i, j)] over leaves 0..k-1, as text, with its widest
    node and depth; None when the counts fit no tree."""
    parent = list(range(k))
    text = [str(i) for i in range(k)]
    size = [1] * k
    depth = [0] * k

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    pairs = sorted((c, i, j) for (i, j), c in lca.items())
    widest = 0
    a = 0
    while a < len(pairs):
        b = a
        while b < len(pairs) and pairs[b][0] == pairs[a][0]:
            b += 1
        count = pairs[a][0]
        # connected groups among this count's pairs (a union-find over the current roots)
        local = {}

        def lf(x):
            while local.get(x, x) != x:
                x = local[x]
            return x

        for _, i, j in pairs[a:b]:
            ri, rj = find(i), find(j)
            if ri == rj:
                continue
            x, y = lf(ri), lf(rj)
            if x != y:
                local[max(x, y)] = min(x, y)
        groups = {}
        for r in set(local) | set(local.values()):
            groups.setdefault(lf(r), set()).add(r)
        seen = set()
        for members in groups.values():
            key = min(members)
            if key in seen:
                continue
            seen.add(key)
            ms = sorted(members)
            total = sum(size[m] for m in ms)
            if total != count:
                return None
            root = ms[0]
            text[root] = "(" + " ".join(text[m] for m in ms) + ")"
            depth[root] = 1 + max(depth[m] for m in ms)
            widest = max(widest, len(ms))
            for m in ms[1:]:
                parent[m] = root
            size[root] = total
        a = b
    root = find(0)
    if size[root] != k:
        return None
    return text[root], widest, depth[root]


def probe_tree(torch, k):
    dev = torch.device("cuda")
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    a = torch.ones(len(pairs), k, dtype=torch.float32)
    for p, (i, j) in enumerate(pairs):
        a[p, i] = 2.0 ** 100
        a[p, j] = -(2.0 ** 100)
    a = a.to(dev, torch.bfloat16)
    b = torch.ones(k, 64, device=dev, dtype=torch.bfloat16)
    out = torch.matmul(a, b)[:, 0].float().cpu().tolist()
    lca = {pq: k - out[p] for p, pq in enumerate(pairs)}
    t = tree_of(k, lca)
    return {"probe": "tree", "gemm": "bf16 x bf16 -> bf16 (cuBLAS)", "k": k,
            "tree": t[0] if t else None, "widest": t[1] if t else None,
            "depth": t[2] if t else None, "fits_a_tree": t is not None}


def dot_tf32(torch, terms):
    dev = torch.device("cuda")
    k = 16 * ((len(terms) + 15) // 16)
    a = torch.zeros(64, k, dtype=torch.float32)
    a[:, :len(terms)] = torch.tensor(terms, dtype=torch.float32)
    b = torch.ones(k, 64, dtype=torch.float32)
    return torch.matmul(a.to(dev), b.to(dev))[0, 0].item()


def main():
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"ok": False, "reason": "no torch: %s" % e}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"ok": False, "reason": "no CUDA device"}))
        return 0
    print(json.dumps({"ok": True, "device": torch.cuda.get_device_name(0),
                      "torch": torch.__version__}))
    for k in (16, 32, 64):
        try:
            print(json.dumps(probe_tree(torch, k)))
        except Exception as e:  # noqa: BLE001
            print(json.dumps({"probe": "tree", "k": k, "error": str(e)}))
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        survive = [kk for kk in range(10, 40) if dot_tf32(torch, [1.0, 2.0 ** -kk, -1.0]) == 2.0 ** -kk]
        last = max(survive) if survive else None
        # the first k lost: contiguous survival up to the unit's fraction bits
        frac = None
        for kk in range(10, 40):
            if kk not in survive:
                frac = kk - 1
                break
        print(json.dumps({"probe": "fraction", "gemm": "f32 x f32 -> f32, TF32 tensor cores",
                          "terms": "1, 2^-k, -1", "largest_k_surviving": last,
                          "fraction_bits": frac}))
        r = dot_tf32(torch, [1.0, 2.0 ** -24, 2.0 ** -25])
        print(json.dumps({"probe": "rounding", "gemm": "f32 x f32 -> f32, TF32 tensor cores",
                          "exact": 1 + 2.0 ** -24 + 2.0 ** -25, "got": r,
                          "rounding": "to nearest" if r == 1 + 2.0 ** -23 else
                          "toward zero" if r == 1.0 else "other"}))
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"probe": "fraction", "error": str(e)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

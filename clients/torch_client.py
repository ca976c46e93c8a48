#!/usr/bin/env python3
"""clients/torch_client.py: an external kernel for `assay check --external` computed by
PyTorch, for the GPU machine (docs/external.md "Clients").

It reads $ASSAY_REQUEST (request.json), builds a PyTorch program of the graph from the
request's JSON tree, runs it on the device (`--device cuda` by default) and writes every
output as out/NAME.npy. Modes:

  --mode eager    (default) the graph definition by definition with PyTorch operations: each
                  definition's real arithmetic in its claimed op format as a torch dtype
                  (float64, float32, float16, bfloat16: PyTorch's CUDA kernels compute 16-bit
                  operations in f32 and round every result), contractions that are plain sums
                  of products through torch.einsum (cuBLAS), other reductions over the
                  masked box through torch's own reductions, stored in the claimed store
                  format;
  --mode compile  the same program as one function through torch.compile (Inductor: Triton
                  kernels generated for the H200);
  --mode sdpa     a graph of examples/attention.tg's shape (s = sum_d q*k*c, m = a max of s
                  over a causal or full range, p = exp(s - m) masked, l = sum p, o = sum p*v
                  / l; grouped K/V heads by h / G) computed by
                  torch.nn.functional.scaled_dot_product_attention; any other graph is
                  declined (unsupported.txt, with why).

What it claims is what assay's default claim says (f32 op formats for 16-bit tensors, as
PyTorch's opmath; every reduction in any order): the schedule in the request is followed
where it names formats. Matmul precision is kept at full f32 (no TF32:
torch.backends.cuda.matmul.allow_tf32 = False), since a TF32 contraction is a different
claim. Without PyTorch (or without the device) the client declines every request with the
reason, so a check here says "unsupported: PyTorch is not installed" rather than crashing;
`--assay-capabilities` needs no PyTorch.
"""
import json
import os
import sys

from numpy_client import ALL_OPS, MONOIDS, FORMATS   # beside this file; imports no NumPy

MODES = ["eager", "compile", "sdpa"]


class Unsupported(Exception):
    pass


def parse_args(argv):
    opts = {"mode": "eager", "device": "cuda", "caps": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--assay-capabilities":
            opts["caps"] = True
        elif a in ("--mode", "--device") and i + 1 < len(argv):
            opts[a[2:]] = argv[i + 1]
            i += 1
        else:
            sys.exit("torch_client: unknown argument %r (--mode eager|compile|sdpa, "
                     "--device DEV, --assay-capabilities)" % a)
        i += 1
    if opts["mode"] not in MODES:
        sys.exit("torch_client: --mode expects eager, compile or sdpa")
    return opts


def capabilities(mode):
    if mode == "sdpa":   # only attention graphs are taken; their ops
        ops = ["add", "sub", "mul", "div", "idiv", "exp", "max", "le", "lt", "select"]
        return {"protocol": 1, "name": "torch-sdpa", "ops": ops, "monoids": ["sum", "max"],
                "formats": ["f32", "f16", "bf16"]}
    return {"protocol": 1, "name": "torch-" + mode, "ops": ALL_OPS, "monoids": MONOIDS,
            "formats": FORMATS}


class Program:
    """The graph as PyTorch operations; __call__(inputs) gives every stored tensor."""

    def __init__(self, torch, req, device):
        self.t = torch
        self.req = req
        self.dev = device
        self.tensors = {x["name"]: x for x in req["tensors"]}
        self.defs_of = {n: d for d in req["defs"] for n in d["results"]}

    def dtype(self, fmt):
        t = self.t
        m = {"f64": t.float64, "f32": t.float32, "f16": t.float16, "bf16": t.bfloat16}
        if fmt not in m:
            raise Unsupported("format %s: PyTorch has no arithmetic in it" % fmt)
        return m[fmt]

    def real(self, v, fmt):
        t = self.t
        if not t.is_tensor(v):
            v = t.tensor(v, dtype=t.float64, device=self.dev)
        if v.dtype == t.bool:
            raise RuntimeError("a boolean used as a value")
        return v.to(self.dtype(fmt))

    def ev(self, e, env, fmt):
        t = self.t
        k = e["k"]
        if k == "num":
            return t.tensor(float(e["value"]), dtype=t.float64, device=self.dev).to(self.dtype(fmt))
        if k in ("int", "size"):
            return t.tensor(int(e["value"]), dtype=t.int64, device=self.dev)
        if k == "var":
            return env[e["var"]]
        if k == "read":
            return self.read(e, env, fmt)
        return self.op(e, env, fmt)

    def read(self, e, env, fmt):
        t = self.t
        name = e["tensor"]
        x = self.vals[name]
        idx, inb = [], None
        for d, ie in enumerate(e["index"]):
            i = self.ev(ie, env, fmt).to(t.int64)
            ok = (i >= 0) & (i < x.shape[d])
            inb = ok if inb is None else inb & ok
            idx.append(i.clamp(0, x.shape[d] - 1))
        v = x[tuple(t.broadcast_tensors(*idx))] if idx else x
        isint = self.tensors[name]["type"] == "int"
        v = v.to(t.int64) if isint else v.to(self.dtype(fmt))
        if "pad" in e and inb is not None:   # a scalar read is never outside
            p = self.ev(e["pad"], env, fmt)
            p = p.to(t.int64) if isint else p.to(self.dtype(fmt))
            v = t.where(inb, v, p)
        return v

    def op(self, e, env, fmt):
        t = self.t
        op, ty, args = e["op"], e["type"], e["args"]
        if op == "select":
            c = self.ev(args[0], env, fmt)
            a, b = self.ev(args[1], env, fmt), self.ev(args[2], env, fmt)
            if ty == "int":
                return t.where(c, a.to(t.int64), b.to(t.int64))
            if ty == "bool":
                return t.where(c, a, b)
            return t.where(c, self.real(a, fmt), self.real(b, fmt))
        vs = [self.ev(a, env, fmt) for a in args]
        if op == "not":
            return t.logical_not(vs[0])
        if op in ("and", "or"):
            return t.logical_and(*vs) if op == "and" else t.logical_or(*vs)
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            a, b = vs
            if a.is_floating_point() or b.is_floating_point():
                a, b = self.real(a, fmt), self.real(b, fmt)
            return getattr(t, op)(a, b)
        if ty == "int":
            a = [v.to(t.int64) for v in vs]
            f = {"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1],
                 "mul": lambda: a[0] * a[1], "neg": lambda: -a[0], "abs": lambda: a[0].abs(),
                 "max": lambda: t.maximum(a[0], a[1]), "min": lambda: t.minimum(a[0], a[1]),
                 "idiv": lambda: t.div(a[0], a[1], rounding_mode="floor"),
                 "mod": lambda: t.remainder(a[0], a[1].abs())}
            return f[op]()
        if op.startswith("cast_"):
            x = vs[0].to(t.float64) if not vs[0].is_floating_point() else vs[0]
            return x.to(self.dtype(op[5:])).to(self.dtype(fmt))
        x = [self.real(v, fmt) for v in vs]
        if op == "add":
            return x[0] + x[1]
        if op == "sub":
            return x[0] - x[1]
        if op == "mul":
            return x[0] * x[1]
        if op == "div":
            return x[0] / x[1]
        if op == "neg":
            return -x[0]
        if op == "abs":
            return x[0].abs()
        if op == "max":
            return t.maximum(x[0], x[1])      # IEEE: NaN propagates; -0 < +0 on CUDA
        if op == "min":
            return t.minimum(x[0], x[1])
        if op == "pow":
            return t.pow(x[0], x[1])
        if op == "fma":
            return t.addcmul(x[2], x[0], x[1])
        if op == "rsqrt":
            return t.rsqrt(x[0])
        fn = {"exp": t.exp, "exp2": t.exp2, "expm1": t.expm1, "log": t.log, "log2": t.log2,
              "log1p": t.log1p, "sqrt": t.sqrt, "sin": t.sin, "cos": t.cos, "tanh": t.tanh,
              "sigmoid": t.sigmoid, "erf": t.erf, "floor": t.floor, "ceil": t.ceil}
        return fn[op](x[0])

    # ------------------------------------------------------------ definitions
    def grid(self, d):
        t = self.t
        nl, nr = len(d["lhs"]), len(d["red"])
        nax = nl + nr
        env = []
        for k, ix in enumerate(d["lhs"]):
            shape = [1] * nax
            shape[k] = ix["extent"]
            env.append(t.arange(ix["extent"], device=self.dev).reshape(shape))
        mask = t.ones([1] * nax, dtype=t.bool, device=self.dev)
        starts, full = [], True
        for r, red in enumerate(d["red"]):
            lo = self.ev(red["lo"], env, "f64").to(t.int64)
            hi = self.ev(red["hi"], env, "f64").to(t.int64)
            L, H = int(lo.min()), int(hi.max())
            full = full and lo.numel() == 1 and hi.numel() == 1
            n = max(H - L, 0)
            shape = [1] * nax
            shape[nl + r] = n
            v = t.arange(L, L + n, device=self.dev).reshape(shape)
            env.append(v)
            mask = mask & (v >= lo) & (v < hi)
            starts.append(L)
        fullshape = [ix["extent"] for ix in d["lhs"]] + [env[nl + r].shape[nl + r] for r in range(nr)]
        return env, mask.expand(fullshape), starts, fullshape, full

    def contraction(self, d, fmt):
        """einsum operands when d's body is a product of plain reads (every index a
        variable, no ??) and at most one power-of-two literal, over full ranges."""
        t = self.t
        reads, scale = [], 1.0

        def walk(e):
            nonlocal scale
            if e["k"] == "op" and e["op"] == "mul":
                return walk(e["args"][0]) and walk(e["args"][1])
            if e["k"] == "num":
                v = float(e["value"])
                m, x = __import__("math").frexp(v)
                if abs(m) != 0.5:
                    return False
                scale *= v
                return True
            if (e["k"] == "read" and "pad" not in e and
                    self.tensors[e["tensor"]]["type"] == "real" and
                    all(i["k"] == "var" for i in e["index"])):
                reads.append(e)
                return True
            return False
        if d["monoid"] != "sum" or not walk(d["body"]) or len(reads) < 2:
            return None
        for r in d["red"]:   # full ranges only: j:E
            if r["lo"]["k"] != "int" or r["lo"]["value"] != 0 or r["hi"]["k"] not in ("int", "size"):
                return None
        letters = "abcdefghijklmnopqrstuvwxyz"
        nl = len(d["lhs"])
        used = {i["var"] for r in reads for i in r["index"]}
        if used != set(range(nl + len(d["red"]))):   # every index in some operand
            return None
        spec = ",".join("".join(letters[i["var"]] for i in r["index"]) for r in reads)
        spec += "->" + letters[:nl]
        ops = [self.vals[r["tensor"]].to(self.dtype(fmt)) for r in reads]
        return t.einsum(spec, *ops) * scale

    def reduce(self, d, x, mask, fullshape, fmt):
        t = self.t
        shape = fullshape[:len(d["lhs"])]
        x = x.to(self.dtype(fmt)).expand(fullshape).reshape(shape + [-1])
        mk = mask.reshape(shape + [-1])
        m = d["monoid"]
        if m == "sum":
            return t.where(mk, x, t.zeros((), dtype=x.dtype, device=self.dev)).sum(-1)
        if m == "prod":
            return t.where(mk, x, t.ones((), dtype=x.dtype, device=self.dev)).prod(-1)
        if m in ("max", "min"):
            big = float("-inf") if m == "max" else float("inf")
            y = t.where(mk, x, t.full((), big, dtype=x.dtype, device=self.dev))
            if y.shape[-1] == 0:
                return t.full(shape, big, dtype=x.dtype, device=self.dev)
            return y.amax(-1) if m == "max" else y.amin(-1)
        if m == "logsumexp":
            y = t.where(mk, x, t.full((), float("-inf"), dtype=x.dtype, device=self.dev))
            return t.logsumexp(y, -1)
        raise RuntimeError(m)

    def select(self, d, x, mask, fullshape, starts):
        t = self.t
        shape = fullshape[:len(d["lhs"])]
        m, L = d["monoid"], starts[0]
        x = x.expand(fullshape).reshape(shape + [-1]).to(t.float64)
        mk = mask.reshape(shape + [-1])
        n = x.shape[-1]
        pos = t.arange(n, device=self.dev).expand_as(x)
        nan = t.isnan(x)
        if m == "topk":
            x, mk, nan, pos = x[..., 0, :], mk[..., 0, :], nan[..., 0, :], pos[..., 0, :]
            K = shape[-1]
            # NaN first, then larger values, then smaller index; outside the range last
            key = t.where(nan, t.full_like(x, float("inf")), x)
            key = t.where(mk, key, t.full_like(x, float("-inf")))
            order = t.argsort(-key, dim=-1, stable=True)[..., :K]
            # stable sort keeps smaller indices first among equal keys
            vals = t.gather(x, -1, order)
            return [vals, (order + L).to(t.int64)]
        big = float("-inf") if m == "argmax" else float("inf")
        y = t.where(mk & ~nan, x, t.full_like(x, big))
        best = y.amax(-1, keepdim=True) if m == "argmax" else y.amin(-1, keepdim=True)
        hit = mk & (y == best)
        anynan = (nan & mk).any(-1, keepdim=True)
        hit = t.where(anynan, nan & mk, hit)
        found = hit.any(-1)
        first = t.where(hit, pos, t.full_like(pos, n)).amin(-1)
        return t.where(found, first + L, t.full_like(first, -1))

    def define(self, d):
        t = self.t
        fmt = d["op"] if d["type"] == "real" else "f64"
        if fmt == "i32":
            fmt = "f64"
        shape = [ix["extent"] for ix in d["lhs"]]
        m = d["monoid"]
        if m == "sum" and d["type"] == "real":
            c = self.contraction(d, fmt)
            if c is not None:
                self.vals[d["results"][0]] = c.to(self.dtype(d["store"]))
                return
        env, mask, starts, fullshape, _ = self.grid(d)
        body = self.ev(d["body"], env, fmt)
        if m in ("argmax", "argmin", "topk"):
            r = self.select(d, body, mask, fullshape, starts)
            if m == "topk":
                self.vals[d["results"][0]] = (r[0].to(t.int64) if d["store"] == "i32" else
                                              r[0].to(self.dtype(d["store"])))
                self.vals[d["results"][1]] = r[1]
            else:
                self.vals[d["results"][0]] = r
            return
        if d["type"] == "int":
            v = body.to(t.int64)
            if m != "none":
                v = v.expand(fullshape).reshape(shape + [-1])
                mk = mask.reshape(shape + [-1])
                ii = t.iinfo(t.int64)

                def c(x):
                    return t.tensor(x, dtype=t.int64, device=self.dev)
                v = {"sum": lambda: t.where(mk, v, c(0)).sum(-1),
                     "prod": lambda: t.where(mk, v, c(1)).prod(-1),
                     "max": lambda: t.where(mk, v, c(ii.min)).amax(-1),
                     "min": lambda: t.where(mk, v, c(ii.max)).amin(-1)}[m]()
            self.vals[d["results"][0]] = v.expand(shape).clone()
            return
        v = self.real(body, fmt) if m == "none" else self.reduce(d, body, mask, fullshape, fmt)
        self.vals[d["results"][0]] = v.expand(shape).to(self.dtype(d["store"])).clone()

    def __call__(self, *inputs):
        self.vals = {}
        for spec, x in zip(self.req["inputs"], inputs):
            self.vals[spec["name"]] = x
        for d in self.req["defs"]:
            self.define(d)
        return tuple(self.vals[o["name"]] for o in self.req["outputs"])


def sdpa(torch, req, inputs, device):
    """examples/attention.tg's structure through scaled_dot_product_attention, or
    Unsupported with what does not match."""
    defs = req["defs"]
    names = [d["monoid"] for d in defs]
    if names != ["sum", "max", "none", "sum", "sum"] or len(req["outputs"]) != 1:
        raise Unsupported("--mode sdpa takes a graph of examples/attention.tg's five "
                          "definitions (s, m, p, l, o); this one has monoids %s" % names)
    s, mx, p, l, o = defs
    scale = 1.0   # s's literal factor (none: 1)

    def find_scale(e):
        nonlocal scale
        if e["k"] == "num":
            scale = float(e["value"])
        for a in e.get("args", []):
            find_scale(a)
    find_scale(s["body"])
    causal = p["body"]["k"] == "op" and p["body"]["op"] == "select"
    byname = {spec["name"]: x for spec, x in zip(req["inputs"], inputs)}
    if set(byname) != {"q", "k", "v"}:
        raise Unsupported("--mode sdpa expects inputs q, k, v laid out as in "
                          "examples/attention.tg ([B, T, H, D], K/V [B, T, KVH, D])")
    q, k, v = (byname[n].permute(0, 2, 1, 3).to(torch.float32) for n in ("q", "k", "v"))
    H, KVH = q.shape[1], k.shape[1]
    if H != KVH:   # grouped heads: head h reads K/V head h / G
        k = k.repeat_interleave(H // KVH, dim=1)
        v = v.repeat_interleave(H // KVH, dim=1)
    kw = {}
    if scale != q.shape[-1] ** -0.5:   # SDPA's own default is 1/sqrt(D) (the scale
        kw["scale"] = scale            # argument exists from PyTorch 2.1)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, **kw)
    return (out.permute(0, 2, 1, 3).contiguous(),)   # o[b, i, h, d]


def to_numpy(torch, x, dtype):
    import numpy as np
    x = x.detach()
    if dtype == "i32":
        return x.to(torch.int64).cpu().numpy().astype("<i4")
    if dtype == "bf16":
        b = x.to(torch.bfloat16).view(torch.int16).cpu().numpy()
        return b.view("<u2")
    t = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16}[dtype]
    return x.to(t).cpu().numpy().astype({"f64": "<f8", "f32": "<f4", "f16": "<f2"}[dtype])


def main():
    opts = parse_args(sys.argv[1:])
    if opts["caps"]:
        print(json.dumps(capabilities(opts["mode"])))
        return 0
    path = os.environ.get("ASSAY_REQUEST")
    if not path:
        sys.exit("torch_client: ASSAY_REQUEST is not set (run me through assay check --external)")
    base = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        req = json.load(f)
    unsupported = os.path.join(base, req.get("unsupported_file", "unsupported.txt"))

    def decline(why):
        with open(unsupported, "w") as f:
            f.write("torch_client: %s\n" % why)
        return 0
    try:
        import numpy as np
        import torch
    except ImportError as e:
        return decline("PyTorch (or NumPy) is not installed here (%s)" % e)
    if opts["device"].startswith("cuda") and not torch.cuda.is_available():
        return decline("no CUDA device is available to PyTorch %s" % torch.__version__)
    if opts["mode"] == "compile" and not hasattr(torch, "compile"):
        return decline("PyTorch %s has no torch.compile (2.0 and later)" % torch.__version__)
    if opts["mode"] == "sdpa" and not hasattr(torch.nn.functional,
                                              "scaled_dot_product_attention"):
        return decline("PyTorch %s has no scaled_dot_product_attention (2.0 and later)" %
                       torch.__version__)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(opts["device"])
    inputs = []
    for spec in req["inputs"]:
        a = np.load(os.path.join(base, spec["file"]))
        if spec["dtype"] == "bf16":
            x = torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)
        elif spec["dtype"] == "i32":
            x = torch.from_numpy(a.astype(np.int64))
        else:
            x = torch.from_numpy(np.ascontiguousarray(a))
        inputs.append(x.to(dev))
    try:
        if opts["mode"] == "sdpa":
            outs = sdpa(torch, req, inputs, dev)
        else:
            prog = Program(torch, req, dev)
            fn = (torch.compile(lambda *xs: prog(*xs), dynamic=False)
                  if opts["mode"] == "compile" else prog)
            with torch.no_grad():
                outs = fn(*inputs)
        if dev.type == "cuda":
            torch.cuda.synchronize()
    except Unsupported as u:
        return decline(str(u))
    for spec, x in zip(req["outputs"], outs):
        np.save(os.path.join(base, spec["file"]), to_numpy(torch, x, spec["dtype"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

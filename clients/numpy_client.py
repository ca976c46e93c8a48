#!/usr/bin/env python3
"""clients/numpy_client.py: an external kernel for `assay check --external` that evaluates
any graph of the protocol with NumPy (docs/external.md).

It reads $ASSAY_REQUEST (request.json), evaluates the graph from the request's JSON tree
("defs": one entry per definition, its body and range bounds as expression trees) in the
formats the claim states (each definition's "op", "accum" and "store"; bf16 as float32
values rounded to bf16 after every operation, the way assay's own backends compute it),
and writes every output as out/NAME.npy. Reductions follow the claimed order: "any" is
NumPy's own sum (pairwise) in f32 and f64, "linear" a chain, "pairwise" the format's tree;
16-bit accumulation is always a chain rounded after every addition. Built-in functions are
computed in f64 and rounded once into the op format (in f64 they are NumPy's own). A claim
this client cannot honour (a format NumPy has no arithmetic for, a split of a linear or
pairwise order) is declined through unsupported.txt with the reason.

`--assay-capabilities` prints what it takes. Faults for assay's tests of the protocol
(`--fault NAME`, each a real mistake a kernel makes): f16-accumulate (every sum and product
accumulated in f16), no-max-shift (exp(x - m) of a max m computed as exp(x): softmax without
its shift), crash, segv, hang, no-output, wrong-shape, wrong-dtype. `--without OPS` (a
comma list of op names) leaves those ops out of the capabilities and refuses (exit 1) a
request that holds one.

NumPy comes from Debian's python3-numpy (scripts/deps.sh), which is /usr/bin/python3's: a
python3 earlier on PATH without NumPy (pyenv) re-executes this file under /usr/bin/python3.
"""
import json
import os
import sys

ALL_OPS = ["neg", "not", "add", "sub", "mul", "div", "idiv", "mod", "eq", "ne", "lt", "le",
           "gt", "ge", "and", "or", "select", "exp", "exp2", "expm1", "log", "log2", "log1p",
           "sqrt", "rsqrt", "abs", "sin", "cos", "tanh", "sigmoid", "erf", "floor", "ceil",
           "pow", "max", "min", "fma", "cast_f64", "cast_f32", "cast_f16", "cast_bf16"]
MONOIDS = ["sum", "prod", "max", "min", "logsumexp", "argmax", "argmin", "topk"]
FORMATS = ["f64", "f32", "f16", "bf16", "i32"]
FAULTS = ["f16-accumulate", "no-max-shift", "crash", "segv", "hang", "no-output",
          "wrong-shape", "wrong-dtype"]


def load_numpy():
    try:
        import numpy
        return numpy
    except ImportError:
        alt = "/usr/bin/python3"
        if (os.path.exists(alt) and os.path.realpath(sys.executable) != os.path.realpath(alt)
                and not os.environ.get("ASSAY_NUMPY_REEXEC")):
            os.environ["ASSAY_NUMPY_REEXEC"] = "1"
            os.execv(alt, [alt, os.path.abspath(__file__)] + sys.argv[1:])
        sys.stderr.write("numpy_client: NumPy is not installed (Debian: python3-numpy, "
                         "scripts/deps.sh)\n")
        sys.exit(3)


def parse_args(argv):
    faults, without = set(), set()
    i = 0
    caps = False
    while i < len(argv):
        a = argv[i]
        if a == "--assay-capabilities":
            caps = True
        elif a in ("--fault", "--without") and i + 1 < len(argv):
            vals = [v for v in argv[i + 1].split(",") if v]
            for v in vals:
                if a == "--fault" and v not in FAULTS:
                    sys.exit("numpy_client: unknown fault %r (known: %s)" % (v, ", ".join(FAULTS)))
                if a == "--without" and v not in ALL_OPS:
                    sys.exit("numpy_client: unknown op %r" % v)
            (faults if a == "--fault" else without).update(vals)
            i += 1
        else:
            sys.exit("numpy_client: unknown argument %r" % a)
        i += 1
    return caps, faults, without


class Unsupported(Exception):
    pass


class Evaluator:
    def __init__(self, np, req, faults):
        self.np = np
        self.req = req
        self.faults = faults
        self.vals = {}                      # tensor name -> array (stored format)
        self.defs_of = {}                   # tensor name -> def entry
        for d in req["defs"]:
            for name in d["results"]:
                self.defs_of[name] = d
        self.tensors = {t["name"]: t for t in req["tensors"]}

    # ---------------------------------------------------------------- formats
    def dtype(self, fmt):
        np = self.np
        if fmt == "f64":
            return np.float64
        if fmt == "f32" or fmt == "bf16":
            return np.float32
        if fmt == "f16":
            return np.float16
        raise Unsupported("format %s: NumPy has no arithmetic in it" % fmt)

    def bf16(self, x):
        """float32 (or float64) values rounded to nearest even into bf16, held as float32."""
        np = self.np
        x = np.asarray(x)
        if x.dtype == np.float64:
            # directly from f64 (no double rounding) where the result is a bf16 normal
            u = x.view(np.uint64)
            r = ((u + np.uint64(0xFFFFFFFFFFF) + ((u >> np.uint64(45)) & np.uint64(1)))
                 >> np.uint64(45)) << np.uint64(45)
            y = r.view(np.float64)
            with np.errstate(over="ignore"):
                y32 = y.astype(np.float32)
            small = np.abs(x) < 2.0 ** -126
            x = np.where(small | np.isnan(x), x.astype(np.float32), y32)
            return np.where(small, self.bf16(x.astype(np.float32)), x).astype(np.float32)
        x = x.astype(np.float32)
        u = x.view(np.uint32).astype(np.uint64)
        s16 = np.uint64(16)
        r = ((u + np.uint64(0x7FFF) + ((u >> s16) & np.uint64(1))) >> s16) << s16
        out = (r & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
        return np.where(np.isnan(x), x, out)

    def rnd(self, x, fmt):
        """x rounded into format fmt (an array of that format's NumPy dtype)."""
        np = self.np
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            if fmt == "bf16":
                if x.dtype not in (np.float32, np.float64):
                    x = x.astype(np.float64)
                return self.bf16(x)
            return x.astype(self.dtype(fmt))

    def real(self, v, fmt):
        """A value of the expression as a real of the op format (integers converted)."""
        np = self.np
        v = np.asarray(v)
        if v.dtype == np.bool_:
            raise RuntimeError("a boolean used as a value")
        if v.dtype.kind in "iu":
            return self.rnd(v.astype(np.float64), fmt)
        if v.dtype == self.dtype(fmt) and fmt != "bf16":
            return v
        return self.rnd(v, fmt)

    # ---------------------------------------------------------------- expressions
    def ev(self, e, env, fmt):
        np = self.np
        k = e["k"]
        if k == "num":
            v = e["value"]
            return self.rnd(np.float64(float(v)), fmt)
        if k == "int" or k == "size":
            return np.int64(e["value"])
        if k == "var":
            return env[e["var"]]
        if k == "read":
            return self.read(e, env, fmt)
        return self.op(e, env, fmt)

    def read(self, e, env, fmt):
        np = self.np
        name = e["tensor"]
        t = self.vals[name]
        idx, inb = [], None
        for d, ie in enumerate(e["index"]):
            i = np.asarray(self.ev(ie, env, fmt)).astype(np.int64)
            ok = (i >= 0) & (i < t.shape[d])
            inb = ok if inb is None else inb & ok
            idx.append(np.clip(i, 0, t.shape[d] - 1))
        if idx:
            idx = np.broadcast_arrays(*idx)
            v = t[tuple(idx)]
        else:
            v = t[()]
        isint = self.tensors[name]["type"] == "int"
        if isint:
            v = np.asarray(v).astype(np.int64)
        else:
            v = self.real(v, fmt)
        if "pad" in e and inb is not None:   # a scalar read is never outside
            p = self.ev(e["pad"], env, fmt)
            p = np.asarray(p).astype(np.int64) if isint else self.real(p, fmt)
            v = np.where(inb, v, p)
            if not isint:
                v = self.rnd(v, fmt)
        return v

    def fn(self, name, x, fmt):
        """A built-in function of one argument: in f64, rounded once into fmt (in f64:
        NumPy's own)."""
        np = self.np
        x64 = np.asarray(x).astype(np.float64)
        with np.errstate(all="ignore"):
            if name == "exp":
                r = np.exp(x64)
            elif name == "exp2":
                r = np.exp2(x64)
            elif name == "expm1":
                r = np.expm1(x64)
            elif name == "log":
                r = np.log(x64)
            elif name == "log2":
                r = np.log2(x64)
            elif name == "log1p":
                r = np.log1p(x64)
            elif name == "sqrt":
                r = np.sqrt(x64)
            elif name == "rsqrt":
                r = 1.0 / np.sqrt(x64)
            elif name == "sin":
                r = np.sin(x64)
            elif name == "cos":
                r = np.cos(x64)
            elif name == "tanh":
                r = np.tanh(x64)
            elif name == "sigmoid":
                r = np.where(x64 >= 0, 1.0 / (1.0 + np.exp(-x64)),
                             np.exp(x64) / (1.0 + np.exp(x64)))
            elif name == "erf":
                import math
                r = np.vectorize(math.erf, otypes=[np.float64])(x64) if x64.size else x64
            elif name == "floor":
                r = np.floor(x64)
            elif name == "ceil":
                r = np.ceil(x64)
            else:
                raise RuntimeError("unknown function " + name)
        return self.rnd(r, fmt)

    def fma(self, a, b, c, fmt):
        """a * b + c rounded once: exactly, element by element (fractions), then into fmt."""
        np = self.np
        from fractions import Fraction
        a, b, c = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                      np.asarray(c, np.float64))
        out = np.empty(a.shape, np.float64)
        dt = self.dtype(fmt)
        for i in np.ndindex(a.shape):
            x, y, z = float(a[i]), float(b[i]), float(c[i])
            if not all(map(np.isfinite, (x, y, z))):
                out[i] = x * y + z
                continue
            f = Fraction(x) * Fraction(y) + Fraction(z)
            if f == 0:
                out[i] = x * y + z   # the IEEE sign of an exact zero
                continue
            d = float(f)
            if fmt == "f64":
                out[i] = d
                continue
            # nearest of fmt to the exact f, ties to even (no double rounding)
            r = float(self.rnd(np.float64(d), fmt))
            if np.isfinite(r):
                cands = [r]
                for direction in (np.inf, -np.inf):
                    q = self.rnd(np.float64(r), fmt).astype(dt)
                    nq = float(np.nextafter(q, dt(direction)))
                    if fmt == "bf16":
                        nq = float(self.step_bf16(r, direction))
                    cands.append(nq)
                best = min(cands, key=lambda v: (abs(Fraction(v) - f) if np.isfinite(v)
                                                 else Fraction(10) ** 400, self.odd(v, fmt)))
                out[i] = best
            else:
                out[i] = r
        return self.rnd(out, fmt)

    def step_bf16(self, r, direction):
        np = self.np
        u = np.array([r], np.float32).view(np.uint32)[0]
        if r == 0:
            u = np.uint32(0x10000 if direction > 0 else 0x80010000)
        else:
            up = (direction > 0) == (r > 0)
            u = np.uint32(int(u) + (0x10000 if up else -0x10000))
        return np.array([u], np.uint32).view(np.float32)[0]

    def odd(self, v, fmt):
        np = self.np
        if fmt == "f32":
            return int(np.array([v], np.float32).view(np.uint32)[0]) & 1
        if fmt == "f16":
            return int(np.array([v], np.float16).view(np.uint16)[0]) & 1
        return (int(np.array([v], np.float32).view(np.uint32)[0]) >> 16) & 1

    def op(self, e, env, fmt):
        np = self.np
        op, ty, args = e["op"], e["type"], e["args"]
        if op == "exp" and "no-max-shift" in self.faults:
            a = args[0]
            if (a["k"] == "op" and a["op"] == "sub" and a["args"][1]["k"] == "read" and
                    self.defs_of.get(a["args"][1]["tensor"], {}).get("monoid") == "max"):
                args = [a["args"][0]]   # the fault: exp(x) in place of exp(x - max)
        if op == "select":
            c = self.ev(args[0], env, fmt)
            a, b = self.ev(args[1], env, fmt), self.ev(args[2], env, fmt)
            if ty == "int":
                return np.where(c, np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64))
            if ty == "bool":
                return np.where(c, a, b)
            return self.rnd(np.where(c, self.real(a, fmt), self.real(b, fmt)), fmt)
        vs = [self.ev(a, env, fmt) for a in args]
        if op in ("and", "or", "not"):
            if op == "not":
                return np.logical_not(vs[0])
            return np.logical_and(*vs) if op == "and" else np.logical_or(*vs)
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            a, b = vs
            ints = all(np.asarray(v).dtype.kind in "iu" for v in vs)
            if not ints:
                a, b = self.real(a, fmt), self.real(b, fmt)
            f = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                 "gt": np.greater, "ge": np.greater_equal}[op]
            return f(a, b)
        if ty == "int":
            vs = [np.asarray(v).astype(np.int64) for v in vs]
            if op == "add":
                return vs[0] + vs[1]
            if op == "sub":
                return vs[0] - vs[1]
            if op == "mul":
                return vs[0] * vs[1]
            if op == "neg":
                return -vs[0]
            if op == "abs":
                return np.abs(vs[0])
            if op == "max":
                return np.maximum(vs[0], vs[1])
            if op == "min":
                return np.minimum(vs[0], vs[1])
            if op == "idiv":
                return np.floor_divide(vs[0], vs[1])
            if op == "mod":
                return np.mod(vs[0], np.abs(vs[1]))
            raise RuntimeError("integer op " + op)
        if op.startswith("cast_"):
            to = op[5:]
            x = vs[0]
            x = np.asarray(x).astype(np.float64) if np.asarray(x).dtype.kind in "iu" else x
            return self.rnd(self.rnd(x, to), fmt)
        xs = [self.real(v, fmt) for v in vs]
        with np.errstate(all="ignore"):
            if op == "add":
                r = xs[0] + xs[1]
            elif op == "sub":
                r = xs[0] - xs[1]
            elif op == "mul":
                r = xs[0] * xs[1]
            elif op == "div":
                r = xs[0] / xs[1]
            elif op == "neg":
                r = -xs[0]
            elif op == "abs":
                r = np.abs(xs[0])
            elif op == "max" or op == "min":
                a, b = np.broadcast_arrays(xs[0], xs[1])
                if op == "max":
                    r = np.maximum(a, b)
                    r = np.where((a == 0) & (b == 0), a + b, r)
                else:
                    r = np.minimum(a, b)
                    r = np.where((a == 0) & (b == 0), -((-a) + (-b)), r)
            elif op == "pow":
                r = self.rnd(np.power(xs[0].astype(np.float64), xs[1].astype(np.float64)), fmt)
            elif op == "fma":
                return self.fma(xs[0], xs[1], xs[2], fmt)
            else:
                return self.fn(op, xs[0], fmt)
        return self.rnd(r, fmt)

    # ---------------------------------------------------------------- definitions
    def grid(self, d):
        """Index variables of definition d over its domain and reduction box; the mask of
        the points inside every reduction range."""
        np = self.np
        nl, nr = len(d["lhs"]), len(d["red"])
        nax = nl + nr
        env = []
        for k, ix in enumerate(d["lhs"]):
            shape = [1] * nax
            shape[k] = ix["extent"]
            env.append(np.arange(ix["extent"], dtype=np.int64).reshape(shape))
        mask = np.ones([1] * nax, dtype=bool)
        starts = []
        for r, red in enumerate(d["red"]):
            lo = np.asarray(self.ev(red["lo"], env, "f64")).astype(np.int64)
            hi = np.asarray(self.ev(red["hi"], env, "f64")).astype(np.int64)
            L, H = int(lo.min()), int(hi.max())
            n = max(H - L, 0)
            shape = [1] * nax
            shape[nl + r] = n
            v = np.arange(L, L + n, dtype=np.int64).reshape(shape)
            env.append(v)
            mask = mask & (v >= lo) & (v < hi)
            starts.append(L)
        full = [ix["extent"] for ix in d["lhs"]] + [env[nl + r].shape[nl + r] for r in range(nr)]
        self.fullshape = full
        return env, np.broadcast_to(mask, full), starts

    def full(self, d, x):
        return self.np.broadcast_to(x, [ix["extent"] for ix in d["lhs"]]).copy()

    def terms(self, d, t, mask):
        """Terms and mask over the whole box, the reduction axes flattened into the last."""
        np = self.np
        shape = [ix["extent"] for ix in d["lhs"]]
        t = np.broadcast_to(t, self.fullshape).reshape(shape + [-1])
        return t, np.asarray(mask).reshape(shape + [-1])

    def reduce(self, d, t, mask, fmt):
        """The reduction of terms t (over the last nred axes, outside mask excluded) in
        format fmt, in the claimed order."""
        np = self.np
        shape = [ix["extent"] for ix in d["lhs"]]
        t, mask = self.terms(d, self.rnd(t, fmt), mask)
        m, order = d["monoid"], d["order"]
        with np.errstate(all="ignore"):
            if m in ("sum", "prod"):
                acc = fmt
                if "f16-accumulate" in self.faults:
                    acc = "f16"
                ident = 0.0 if m == "sum" else 1.0
                tt = self.rnd(np.where(mask, t, ident), acc)
                if any(int(s) > 1 for s in d["split"]) and order != "any":
                    raise Unsupported("a split %s order: this client computes claimed splits "
                                      "only in order any" % order)
                if acc in ("f16", "bf16") or order == "linear":
                    r = self.rnd(np.full(shape, ident), acc)
                    for i in range(tt.shape[-1]):
                        nxt = r + tt[..., i] if m == "sum" else r * tt[..., i]
                        r = np.where(mask[..., i], self.rnd(nxt, acc), r)
                elif order == "pairwise":
                    r = self.pairwise(tt, mask, m, acc)
                else:
                    r = (np.sum(tt, axis=-1, where=mask) if m == "sum"
                         else np.prod(tt, axis=-1, where=mask))
                    r = self.rnd(r, acc)
                if m == "sum":   # an exact zero is -0 only when every term is -0
                    neg0 = np.all(~mask | ((tt == 0) & np.signbit(tt)), axis=-1) & mask.any(-1)
                    r = np.where(neg0, self.rnd(np.float64(-0.0), acc), r)
                return self.rnd(r, fmt)
            if m in ("max", "min"):
                big = np.inf if m == "min" else -np.inf
                tt = np.where(mask, t, big)
                r = np.max(tt, axis=-1, initial=big) if m == "max" else np.min(tt, axis=-1, initial=big)
                zero = r == 0
                if zero.any():
                    pos = np.any(mask & (tt == 0) & ~np.signbit(tt), axis=-1)
                    neg = np.any(mask & (tt == 0) & np.signbit(tt), axis=-1)
                    z = np.where(pos if m == "max" else ~neg, 0.0, -0.0)
                    r = np.where(zero, z, r)
                return self.rnd(r, fmt)
            if m == "logsumexp":
                tt = np.where(mask, t, -np.inf)
                mx = np.max(tt, axis=-1, initial=-np.inf)
                ms = np.where(np.isfinite(mx), mx, 0).astype(tt.dtype)
                ex = self.fn("exp", self.rnd(tt - ms[..., None], fmt), fmt)
                ex = np.where(mask, ex, 0)
                s = self.rnd(np.sum(ex, axis=-1), fmt)
                return self.rnd(ms + self.fn("log", s, fmt), fmt)
        raise RuntimeError("monoid " + m)

    def pairwise(self, tt, mask, m, acc):
        """The pairwise tree of graph-format.md 7 over the valid terms (left: the first
        floor(n/2)); computed per element where ranges differ."""
        np = self.np
        n = tt.shape[-1]
        if mask.all():
            def tree(lo, k):
                if k == 1:
                    return tt[..., lo]
                h = k // 2
                a, b = tree(lo, h), tree(lo + h, k - h)
                return self.rnd(a + b if m == "sum" else a * b, acc)
            return tree(0, n) if n else self.rnd(np.zeros(tt.shape[:-1]), acc)
        out = np.empty(tt.shape[:-1], tt.dtype)
        for i in np.ndindex(tt.shape[:-1]):
            v = tt[i][mask[i]]
            def tree1(lo, k):
                if k == 1:
                    return v[lo]
                h = k // 2
                a, b = tree1(lo, h), tree1(lo + h, k - h)
                return self.rnd(a + b if m == "sum" else a * b, acc)
            out[i] = tree1(0, len(v)) if len(v) else (0.0 if m == "sum" else 1.0)
        return out

    def select(self, d, t, mask, starts):
        """argmax, argmin (the index) and topk (values and indices) over the one reduction
        index: NaN wins, ties go to the smaller index."""
        np = self.np
        shape = [ix["extent"] for ix in d["lhs"]]
        m = d["monoid"]
        L = starts[0]
        if m == "topk":
            K = shape[-1]
            t, mask = self.terms(d, t, mask)
            t, mask = t[..., 0, :], mask[..., 0, :]   # the terms do not depend on K's index
            n = t.shape[-1]
            pos = np.broadcast_to(np.arange(n), t.shape)
            isnan = np.isnan(t)
            key = np.where(isnan, 0, -t.astype(np.float64))
            order = np.lexsort((pos, key, ~isnan, ~mask), axis=-1)[..., :K]
            vals = np.take_along_axis(t, order, axis=-1)
            vals = vals.astype(np.int64) if d["store"] == "i32" else self.rnd(vals, d["store"])
            return [vals, (order + L).astype(np.int64)]
        t, mask = self.terms(d, t, mask)
        isnan = np.isnan(t) & mask
        big = -np.inf if m == "argmax" else np.inf
        tt = np.where(mask & ~isnan, t, big)
        best = tt.max(axis=-1, initial=big) if m == "argmax" else tt.min(axis=-1, initial=big)
        hit = mask & (tt == best[..., None])
        anynan = isnan.any(-1)
        hit = np.where(anynan[..., None], isnan, hit)
        found = hit.any(-1)
        idx = np.argmax(hit, axis=-1) + L
        return np.where(found, idx, -1).astype(np.int64)

    def define(self, d):
        np = self.np
        env, mask, starts = self.grid(d)
        fmt = d["op"] if d["type"] == "real" else "f64"
        if fmt == "i32":   # a real reduction of integer terms (logsumexp of ints): exact in f64
            fmt = "f64"
        if fmt not in ("f64", "f32", "f16", "bf16"):
            raise Unsupported("op format %s of %s: NumPy has no arithmetic in it" %
                              (fmt, d["results"][0]))
        body = self.ev(d["body"], env, fmt)
        m = d["monoid"]
        if m in ("argmax", "argmin", "topk"):
            res = self.select(d, body, mask, starts)
            if m == "topk":
                self.vals[d["results"][0]] = res[0]
                self.vals[d["results"][1]] = res[1]
            else:
                self.vals[d["results"][0]] = res
            return
        if d["type"] == "int":
            v = np.asarray(body).astype(np.int64)
            if m != "none":
                big = np.iinfo(np.int64)
                v, mk = self.terms(d, v, mask)
                if m == "sum":
                    v = np.where(mk, v, 0).sum(-1)
                elif m == "prod":
                    v = np.where(mk, v, 1).prod(-1)
                elif m == "max":
                    v = np.where(mk, v, big.min).max(-1, initial=big.min)
                elif m == "min":
                    v = np.where(mk, v, big.max).min(-1, initial=big.max)
            self.vals[d["results"][0]] = self.full(d, v)
            return
        if m == "none":
            v = self.real(body, fmt)
        else:
            if d["accum"] != fmt and d["accum"] != "i32":
                raise Unsupported("accum %s differs from op %s" % (d["accum"], fmt))
            v = self.reduce(d, self.real(body, fmt), mask, fmt)
        self.vals[d["results"][0]] = self.rnd(self.full(d, v), d["store"])

    def run(self, base):
        np = self.np
        for t in self.req["inputs"]:
            a = np.load(os.path.join(base, t["file"]))
            if t["dtype"] == "bf16":
                a = (a.astype(np.uint32).reshape(-1) << np.uint32(16)).view(np.float32).reshape(a.shape)
            elif t["dtype"] == "i32":
                a = a.astype(np.int64)
            self.vals[t["name"]] = a
        for d in self.req["defs"]:
            self.define(d)


def to_output(np, v, dtype):
    with np.errstate(all="ignore"):
        if dtype == "i32":
            return np.asarray(np.rint(v) if np.asarray(v).dtype.kind == "f" else v).astype("<i4")
        if dtype == "bf16":
            v = np.asarray(v)
            ev = Evaluator.__new__(Evaluator)
            ev.np = np
            b = ev.bf16(v.astype(np.float64) if v.dtype.kind in "iu" else v)
            return (b.astype(np.float32).view(np.uint32) >> 16).astype("<u2")
        return np.asarray(v).astype({"f64": "<f8", "f32": "<f4", "f16": "<f2"}[dtype])


def capabilities(without, name="numpy"):
    return {"protocol": 1, "name": name, "ops": [o for o in ALL_OPS if o not in without],
            "monoids": MONOIDS, "formats": FORMATS}


def ops_of(req):
    seen = set()

    def walk(e):
        if isinstance(e, dict):
            if e.get("k") == "op":
                seen.add(e["op"])
            for v in e.values():
                walk(v)
        elif isinstance(e, list):
            for v in e:
                walk(v)
    walk(req["defs"])
    return seen


def main():
    caps, faults, without = parse_args(sys.argv[1:])
    if caps:
        print(json.dumps(capabilities(without)))
        return 0
    np = load_numpy()
    path = os.environ.get("ASSAY_REQUEST")
    if not path:
        sys.exit("numpy_client: ASSAY_REQUEST is not set (run me through assay check --external)")
    base = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        req = json.load(f)
    lacking = sorted(ops_of(req) & without)
    if lacking:
        sys.exit("numpy_client: the request holds %s, which --without declared absent" %
                 ", ".join(lacking))
    if "crash" in faults:
        raise RuntimeError("numpy_client: --fault crash")
    if "segv" in faults:
        import signal
        os.kill(os.getpid(), signal.SIGSEGV)
    if "hang" in faults:
        import time
        while True:
            time.sleep(1)
    if "no-output" in faults:
        return 0
    ev = Evaluator(np, req, faults)
    try:
        ev.run(base)
    except Unsupported as u:
        with open(os.path.join(base, req.get("unsupported_file", "unsupported.txt")), "w") as f:
            f.write("numpy_client: %s\n" % u)
        return 0
    for o in req["outputs"]:
        v = to_output(np, ev.vals[o["name"]], o["dtype"])
        if "wrong-shape" in faults:
            v = v.reshape(-1)[:-1] if v.size > 1 else np.zeros(2, v.dtype)
        if "wrong-dtype" in faults:
            v = v.astype("<f8") if v.dtype != np.dtype("<f8") else v.astype("<f4")
        np.save(os.path.join(base, o["file"]), v)
    return 0


if __name__ == "__main__":
    sys.exit(main())

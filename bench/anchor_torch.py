#!/usr/bin/env python3
"""bench/anchor_torch.py: PyTorch's own figures on this machine's GPU, the anchors of
bench/bench_gpu.c (which runs this script and reads its output).

Prints exactly one JSON line on stdout and exits 0 whatever happens: either the figures,
or {"ok": false, "reason": ...} when python's torch, CUDA or a GPU is missing or a
measurement fails. Figures (each the median of --reps timings after warm-up, timed with
CUDA events, so they are device time without host overhead):
  matmul_bf16_tflops   torch.matmul of two bf16 n x n CUDA tensors (cuBLAS), 2 n^3 flops
  copy_gbs             y.copy_(x) of a --copy-mib MiB f32 tensor, read + write bytes
  softmax_{f32,bf16}_gbs     torch.softmax(x, -1) on rows x cols, input + output bytes
  layernorm_{f32,bf16}_gbs   layer_norm over the last axis with weight and bias, eps 1e-5,
                             input + weight + bias + output bytes
"""
import argparse
import json
import statistics
import sys


def timed(torch, fn, reps, warm):
    """Median seconds of fn() over reps runs, each bracketed by CUDA events."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)


def measure(torch, a, out):
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    n = a.n
    x = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=gen)
    w = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=gen)
    t = timed(torch, lambda: torch.matmul(x, w), a.reps, 3)
    out["matmul_n"] = n
    out["matmul_bf16_tflops"] = 2.0 * n * n * n / t / 1e12
    del x, w

    elems = a.copy_mib * (1 << 20) // 4
    src = torch.empty(elems, device=dev, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    t = timed(torch, lambda: dst.copy_(src), a.reps, 2)
    out["copy_bytes"] = 2 * elems * 4
    out["copy_gbs"] = 2.0 * elems * 4 / t / 1e9
    del src, dst

    rows, cols = a.rows, a.cols
    out["rows"], out["cols"] = rows, cols
    fn = torch.nn.functional
    for name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        size = torch.tensor([], dtype=dt).element_size()
        xs = torch.randn(rows, cols, device=dev, dtype=dt, generator=gen)
        g = torch.rand(cols, device=dev, dtype=dt, generator=gen) + 0.5
        b = torch.rand(cols, device=dev, dtype=dt, generator=gen) - 0.5
        t = timed(torch, lambda: torch.softmax(xs, dim=-1), a.reps, 2)
        out["softmax_%s_gbs" % name] = 2.0 * rows * cols * size / t / 1e9
        t = timed(torch, lambda: fn.layer_norm(xs, (cols,), g, b, 1e-5), a.reps, 2)
        out["layernorm_%s_gbs" % name] = (2.0 * rows * cols + 2.0 * cols) * size / t / 1e9
        del xs, g, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4096, help="matmul size (n x n x n)")
    ap.add_argument("--rows", type=int, default=8192, help="softmax/layernorm rows")
    ap.add_argument("--cols", type=int, default=8192, help="softmax/layernorm columns")
    ap.add_argument("--copy-mib", type=int, default=512, help="MiB copied device to device")
    ap.add_argument("--reps", type=int, default=10, help="timings per figure (>= 10)")
    a = ap.parse_args()
    a.reps = max(a.reps, 10)
    out = {"ok": False}
    try:
        import torch
    except Exception as e:  # torch missing or broken: say which
        out["reason"] = "torch not importable (%s: %s)" % (type(e).__name__, e)
        print(json.dumps(out))
        return 0
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
    if not torch.cuda.is_available():
        out["reason"] = "torch %s sees no CUDA GPU (torch.version.cuda = %s)" % (
            torch.__version__, torch.version.cuda)
        print(json.dumps(out))
        return 0
    out["device"] = torch.cuda.get_device_name(0)
    try:
        measure(torch, a, out)
        out["ok"] = True
    except Exception as e:  # an out-of-memory or driver error: report it, keep what was measured
        out["reason"] = "measurement failed (%s: %s)" % (type(e).__name__, e)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

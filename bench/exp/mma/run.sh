#!/bin/sh
# bench/exp/mma/run.sh OUT: the device half of the matrix-unit experiment (README.md here).
# Builds mma.cu with nvcc for this machine's GPU (sm_90a on a 9.0 card, for wgmma), runs it,
# and leaves in OUT, a flat folder: gpu.txt (the card), build.txt (nvcc's output),
# probes.txt (the probe text, printed here too) and mma-dump.bin (for compare, on the
# host). Extra arguments go to mma (NRAND_MMA, NRAND_WGMMA). Exit: mma's status (0; 1 a
# layout check failed), 2 no OUT given, 3 no GPU, no nvcc, or a failed build or run.
OUT=${1:-}
[ -n "$OUT" ] || { echo "usage: sh bench/exp/mma/run.sh OUT [NRAND_MMA [NRAND_WGMMA]]" >&2; exit 2; }
shift
D=$(dirname "$0")
mkdir -p "$OUT" || exit 3

CC=
command -v nvidia-smi >/dev/null 2>&1 &&
	CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' ')
case $CC in
[0-9]*.[0-9]*) ;;
*) echo "run.sh: no NVIDIA GPU here (nvidia-smi reports no compute capability): nothing run" >&2
   exit 3 ;;
esac
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv >"$OUT/gpu.txt" 2>&1
# 9.0 takes the arch-specific target: wgmma exists only there
case $CC in
9.0) ARCH=sm_90a ;;
*) ARCH=sm_$(echo "$CC" | tr -d .) ;;
esac

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "run.sh: no nvcc (PATH or /usr/local/cuda/bin)" >&2; exit 3; }
BIN=${TMPDIR:-/tmp}/assay-mma.$$
"$NVCC" --version | tail -n 1 >"$OUT/build.txt"
echo "$NVCC -std=c++17 -O2 -arch=$ARCH -o $BIN $D/mma.cu" >>"$OUT/build.txt"
"$NVCC" -std=c++17 -O2 -arch=$ARCH -o "$BIN" "$D/mma.cu" >>"$OUT/build.txt" 2>&1 ||
	{ cat "$OUT/build.txt"; echo "run.sh: the build failed" >&2; exit 3; }

"$BIN" "$OUT/mma-dump.bin" "$@" >"$OUT/probes.txt" 2>&1
rc=$?
rm -f "$BIN"
cat "$OUT/probes.txt"
ls -l "$OUT"
exit $rc

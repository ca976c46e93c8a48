#!/bin/sh
# Dumps the program text every backend emits, so that a refactor of the emitters can prove
# it changed no kernel: run it with the binary built before the change and after, then
# `diff -r BEFORE AFTER` must be empty.
#
#   scripts/emit-golden.sh ASSAY OUTDIR [GRAPH.tg...]
#
# Graphs: examples/*.tg, tests/regress/*.tg, tests/ops/*.tg (every op in every type) and
# any given. Each graph on every backend under its own schedule and SAMPLES (default 6)
# sampled ones, the cuda backend also in both ASSAY_CUDA_MODEs, and softmax with a row too
# long for the c backend's stack. One file per case: the text or the error message, then
# the exit status (an unsupported graph is a result too). Deterministic: the same binary gives the same files.
set -u
[ $# -ge 2 ] || { echo "usage: $0 ASSAY OUTDIR [GRAPH.tg...]" >&2; exit 2; }
A=$1; O=$2; shift 2
SAMPLES=${SAMPLES:-6}
rm -rf "$O" && mkdir -p "$O" || exit 3

# one NAME GRAPH BACKEND SCHEDULE [FLAGS...]: SCHEDULE is "default" or a sample seed
one() {
	f="$O/$1.$3.$4" g=$2 b=$3 s=$4
	shift 4
	if [ "$s" = default ]; then
		"$A" emit "$g" --backend "$b" "$@" >"$f" 2>&1
	else
		"$A" emit "$g" --backend "$b" --sample "$s" "$@" >"$f" 2>&1
	fi
	echo "rc=$?" >>"$f"
}

for g in examples/*.tg tests/regress/*.tg tests/ops/*.tg "$@"; do
	n=$(basename "$g" .tg)
	for b in c opencl cuda vulkan wgsl; do
		one "$n" "$g" "$b" default
		for s in $(seq 1 "$SAMPLES"); do one "$n" "$g" "$b" "$s"; done
	done
	for m in block thread; do
		for s in default 1 2 3; do ASSAY_CUDA_MODE=$m one "$n-$m" "$g" cuda "$s"; done
	done
done
for b in c opencl cuda vulkan wgsl; do
	for s in default $(seq 1 12); do one softmax-long examples/softmax.tg "$b" "$s" --size V=9000; done
done
echo "$(ls "$O" | wc -l) programs in $O"

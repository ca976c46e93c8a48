#!/bin/sh
# bench/exp/mma/check.sh: the host half of the experiment, tested without a device, from the
# repository root. Builds compare and synth against build/libassay.a (make -j2
# build/libassay.a first if it is missing), checks that mma.cu compiles for sm_90a and sm_80
# (nvcc and ptxas need no GPU), then holds synthetic dumps to compare: the model's own
# answers must give 0 mismatches, one flipped bit exactly 1, a flipped NaN payload bit 1
# counted only as "bits differ", and an sm_80 dump (block 8, chained) 0 again.
# Exit 0 when all of that holds, 1 otherwise.
set -u
D=bench/exp/mma
T=${TMPDIR:-/tmp}/assay-mma-check.$$
mkdir -p "$T" || exit 1
fail() { echo "check.sh: FAILED: $*"; rm -rf "$T"; exit 1; }
L="build/libassay.a -lmpfr -lgmp -lm -ldl -pthread"
W="-std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -I."
[ -f build/libassay.a ] || fail "no build/libassay.a (make -j2 build/libassay.a)"
cc $W $D/compare.c $L -o $D/compare || fail "compare.c does not build"
cc $W $D/synth.c $L -o $D/synth || fail "synth.c does not build"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
for a in sm_90a sm_80; do
	"$NVCC" -std=c++17 -O2 -arch=$a -Xcompiler -Wall,-Wextra -o "$T/mma_$a" $D/mma.cu ||
		fail "mma.cu does not compile for $a"
done
echo "check.sh: compare, synth built; mma.cu compiles for sm_90a and sm_80"

count() { # the "all" row's column $2 of instruction $3's table in compare's output $1
	awk -v ins="$3" -v col="$2" '$0 ~ "^" ins " against" { t = 1 } t && $1 == "all" { print $col; exit }' "$1"
}
$D/synth "$T/m.bin" >/dev/null && $D/compare "$T/m.bin" >"$T/m.txt" || fail "the model's own dump mismatches"
$D/synth --flip 100:5:0 "$T/f.bin" >/dev/null
$D/compare "$T/f.bin" >"$T/f.txt" && fail "a flipped bit went unseen"
[ "$(count "$T/f.txt" 3 mma.m16n8k16.row.col.f32.bf16.bf16.f32)" = 1 ] || fail "one flipped bit is not 1 mismatch"
$D/synth --flip 12:0:0 "$T/n.bin" >/dev/null
$D/compare "$T/n.bin" >"$T/n.txt"
[ "$(count "$T/n.txt" 3 mma.m16n8k16.row.col.f32.bf16.bf16.f32)" = 1 ] &&
	[ "$(count "$T/n.txt" 4 mma.m16n8k16.row.col.f32.bf16.bf16.f32)" = 0 ] || fail "a NaN payload bit is not counted so"
$D/synth --sm 80 "$T/a.bin" >/dev/null && $D/compare "$T/a.bin" >/dev/null || fail "the sm_80 dump mismatches"
$D/synth --probes "$T/p.bin" >"$T/p.txt"
grep -q 'not the model\|note:' "$T/p.txt" && fail "probe text from the model's D disagrees with the model's row"
echo "check.sh: synthetic dumps: 0 mismatches, a flipped bit 1, a NaN payload bit 1 (bits only), sm_80 0; probes agree"
rm -rf "$T"

#!/bin/sh
# device experiment: nvcc each variant with the backend's NVRTC options, time, compare bits with the first of its family
cd "$(dirname "$0")"
F="-arch=sm_90 --fmad=false --prec-div=true --prec-sqrt=true --ftz=false -std=c++17 -diag-suppress 177,550"
# the kernels as this tree's assay emits them (the carried .devpack's there, build/'s here)
A=${ASSAY:-../../../.devpack/bin/assay}
[ -x "$A" ] || A=../../../build/assay
export LD_LIBRARY_PATH="../../../.devpack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$A" emit softmax_bf16.tg --backend cuda >/tmp/rows_v0.cu &&
	"$A" emit layernorm_bf16.tg --backend cuda >/tmp/rows_l0.cu || exit 1
python3 variants.py || exit 1
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
nvcc $F -o /tmp/mx mx.cu && /tmp/mx
for v in v0 v1 v2 v4 l0 l1 l2 $EXTRA; do
	case $v in l*) D=-DLN;; *) D=;; esac
	echo "$v: $(nvcc $F $D -include /tmp/rows_$v.cu -o /tmp/h_$v harness.cu -Xptxas -v 2>&1 | grep -E 'registers|error' | head -2)"
done
for pass in 1 2; do
for v in v0 v1 v2 v4 l0 l1 l2 $EXTRA; do
	case $v in l*) base=l0; WG=256;; *) base=v0; WG=128;; esac
	[ -x /tmp/h_$v ] || { echo "$v: no binary"; continue; }
	echo "$v: $(/tmp/h_$v /tmp/out_$v.bin 4224 $WG) $(cmp -s /tmp/out_$base.bin /tmp/out_$v.bin && echo same-bits || echo DIFFERENT)"
done
done

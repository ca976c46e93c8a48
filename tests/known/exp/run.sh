#!/bin/sh
# tests/known/exp/run.sh ASSAY: the device experiment behind tests/known/README.md's notes on
# NVIDIA's vulkan losing a tile's stores: every graph here, three runs each, on vulkan (and
# cuda beside it), and the repros of tests/known. Run on the H200: SCRIPT=tests/known/exp/run.sh bash scripts/device-run.sh script
A=$1
for f in tests/known/exp/*.tg tests/known/*.tg; do
	n=$(basename "$f" .tg)
	for k in 1 2 3; do
		printf '%s run %s: ' "$n" "$k"
		"$A" check "$f" --backends vulkan,cuda 2>&1 | grep -E '^[^ ]+ +(vulkan|cuda) ' | awk '{printf "%s %s; ", $2, $5}'
		echo
	done
done

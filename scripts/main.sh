#!/usr/bin/env bash
# The main job of a fresh machine (README, first command): installs what assay needs, builds
# it, then checks and evaluates every example with the exact oracle and prints a summary.
# (Fuzz campaigns and reports take this place once they exist.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -j"$(nproc)" >/dev/null
echo "built ./assay ($(./assay --version))"
printf '\n%-22s %-8s %-10s %-12s %s\n' example outputs elements unsamplable seconds
fail=0
for g in examples/*.tg; do
	start=$(date +%s.%N)
	if out=$(./assay eval --json --threads "$(nproc)" "$g" 2>&1); then
		end=$(date +%s.%N)
		n=$(printf '%s' "$out" | grep -c '"name"' || true)
		el=$(printf '%s' "$out" | sed -n 's/.*"elements": \([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}')
		un=$(printf '%s' "$out" | sed -n 's/.*"unsamplable": \([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}')
		printf '%-22s %-8s %-10s %-12s %.2f\n' "$(basename "$g" .tg)" "$n" "$el" "$un" "$(awk -v a="$start" -v b="$end" 'BEGIN {print b-a}')"
	else
		printf '%-22s FAILED\n%s\n' "$(basename "$g" .tg)" "$out"
		fail=1
	fi
done
if [ $fail -ne 0 ]; then
	echo "some examples failed to evaluate"
	exit 1
fi
echo
echo "every example checked and evaluated; './assay eval examples/softmax.tg' shows one in full"

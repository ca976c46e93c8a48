#!/usr/bin/env bash
# The main job of a fresh machine (README, first command): installs what assay needs, builds
# it, lists the backends, runs a short fuzz campaign on every available backend (random
# graphs, schedules and inputs, each checked against the MPFR oracle and its error budget;
# failures reduced to minimal repros), writes the report and gates it.
#   SECONDS_BUDGET  length of the campaign in seconds (default 90)
#   OUT             the campaign directory (default out/campaign; replaced)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -j"$(nproc)" >/dev/null
echo "built ./assay ($(./assay --version))"
echo
./assay backends
OUT=${OUT:-out/campaign}
secs=${SECONDS_BUDGET:-90}
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
echo
echo "== fuzz campaign: $secs s on every available backend, $(nproc) jobs -> $OUT"
set +e
./assay fuzz --seconds "$secs" --jobs "$(nproc)" --seed "$(date +%s)" -o "$OUT"
fuzz_rc=$?
set -e
if [ $fuzz_rc -ge 2 ]; then
	echo "main: the campaign could not run (exit $fuzz_rc)" >&2
	exit $fuzz_rc
fi
echo
./assay report "$OUT" -o "$OUT/report"
echo
echo "== gate: examples/campaign.policy"
set +e
./assay gate "$OUT" --policy examples/campaign.policy
gate_rc=$?
set -e
echo
echo "report: $(realpath "$OUT/report/index.html")"
if [ $gate_rc -eq 0 ]; then
	echo "gate: PASS"
else
	echo "gate: FAIL (distinct failures and their minimal repros: $OUT/failures/)"
fi
exit $gate_rc

#!/usr/bin/env bash
# The main job of a fresh machine (README, first command): installs what assay needs, builds
# it, lists the backends, runs a short fuzz campaign on every available backend (random
# graphs, schedules and inputs, each checked against the MPFR oracle and its error budget;
# failures reduced to minimal repros), writes the report and gates it.
#   CASES           cases of the campaign (default 150)
#   SECONDS_BUDGET  a length in seconds instead (default: none, CASES decides)
#   SEED            the campaign's seed (default 1: the same graphs, schedules and inputs on
#                   every machine, so a failure it shows is reproducible; SEED=random draws
#                   one from the clock)
#   OUT             the campaign directory (default out/campaign; replaced)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -j"$(nproc)" >/dev/null
echo "built ./assay ($(./assay --version))"
echo
./assay backends
OUT=${OUT:-out/campaign}
seed=${SEED:-1}
[ "$seed" = random ] && seed=$(date +%s)
if [ -n "${SECONDS_BUDGET:-}" ]; then
	stop=(--seconds "$SECONDS_BUDGET"); what="$SECONDS_BUDGET s"
else
	stop=(--cases "${CASES:-150}"); what="${CASES:-150} cases"
fi
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
echo
echo "== fuzz campaign: $what on every available backend, seed $seed, $(nproc) jobs -> $OUT"
set +e
./assay fuzz "${stop[@]}" --jobs "$(nproc)" --seed "$seed" -o "$OUT"
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

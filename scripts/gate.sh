#!/bin/sh
# scripts/gate.sh: `make gate`: checks every example on every available backend, writes the
# report and gates it with the release policy (docs/policy.md).
#   ASSAY   the assay program (default ./assay)
#   OUT     the run directory (default build/gate; the report goes to OUT/report)
#   POLICY  the policy (default examples/release.policy)
#   CHECK_FLAGS  extra flags for assay check (e.g. "--schedules 2")
# Exit: 0 when every gate holds; 1 when a gate fails; 2 or 3 when the check, the report or
# the policy could not run (their own messages say why).
ASSAY=${ASSAY:-./assay}
OUT=${OUT:-build/gate}
POLICY=${POLICY:-examples/release.policy}
echo "== assay check examples/*.tg on every available backend -> $OUT"
"$ASSAY" backends
# --force: OUT is reused from run to run, and check.txt is in it before check starts
# shellcheck disable=SC2086
mkdir -p "$OUT" && "$ASSAY" check examples/*.tg $CHECK_FLAGS --force -o "$OUT" >"$OUT/check.txt" 2>&1
rc=$?
tail -n 1 "$OUT/check.txt"
# exit 1 is a verdict (the gates judge it); 2 and 3 mean the check did not run
if [ $rc -ge 2 ]; then
	cat "$OUT/check.txt" >&2
	echo "gate: assay check failed (exit $rc)" >&2
	exit $rc
fi
"$ASSAY" report "$OUT" -o "$OUT/report" || exit $?
echo "== assay gate $OUT --policy $POLICY"
"$ASSAY" gate "$OUT" --policy "$POLICY"

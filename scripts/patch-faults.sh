#!/bin/sh
# scripts/patch-faults.sh: the hidden-style measure of the fuzzer (`make patch-faults`). Each
# faults/NAME.patch is a realistic compiler bug written as a source patch, apart from the
# fuzzer (faults/README.md). For each, a scratch copy of this tree is patched and built, and
# a campaign is run on it with --until-failure against a baseline: a control campaign of the
# unpatched tree with the same settings, so failures the tree already has (known driver
# bugs, flaky results, budget gaps) are not counted as kills. Prints one row per fault:
# killed or survived, the cases and seconds to the first new distinct failure, the failing
# backend and signature, the reduced repro's definitions; and, with EXAMPLES=1, how many
# results of `assay check examples/*.tg` fail on the patched tree (a fault that breaks
# everything is not realistic). A patch that no longer applies or builds is reported as
# such: neither a kill nor a survival.
#
# Usage: sh scripts/patch-faults.sh [faults/NAME.patch ...]   (default: every faults/*.patch, faults/fresh/*.patch and faults/fresh3/*.patch)
# Environment:
#   CASES=600 JOBS=2 BACKENDS=c,opencl,vulkan SEED=5 REDUCE_TESTS=200
#   OUT=DIR        where everything goes (default: a new /tmp/assay-patch-faults.XXXXXX): the
#                  scratch trees, build logs, campaigns, table.txt and results.tsv
#   CONTROL=DIR    the control campaign: resumed to CASES if it exists (assay refuses one of
#                  other settings), made there otherwise (default: OUT/control)
#   EXAMPLES=1     check the examples on each patched tree (0: skip)
#   LIMIT_S=0      wall-clock seconds a campaign may run (0: no limit); one stopped by it
#                  survived its cases so far
#   KEEP_TREES=0   keep each patched scratch tree (else removed after its campaign)
#   MAKEJ=2        make's parallelism
# Exit status: 0 when every patch applied, built and ran; 1 otherwise (the table says which).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CASES=${CASES:-600}
JOBS=${JOBS:-2}
BACKENDS=${BACKENDS:-c,opencl,vulkan}
SEED=${SEED:-5}
REDUCE_TESTS=${REDUCE_TESTS:-200}
EXAMPLES=${EXAMPLES:-1}
LIMIT_S=${LIMIT_S:-0}
KEEP_TREES=${KEEP_TREES:-0}
MAKEJ=${MAKEJ:-2}
OUT=${OUT:-$(mktemp -d /tmp/assay-patch-faults.XXXXXX)}
mkdir -p "$OUT/campaigns" "$OUT/trees" || exit 1
OUT=$(cd "$OUT" && pwd)
CONTROL=${CONTROL:-$OUT/control}
if [ $# -gt 0 ]; then PATCHES="$*"; else PATCHES=$(ls "$ROOT"/faults/*.patch "$ROOT"/faults/fresh/*.patch "$ROOT"/faults/fresh3/*.patch 2>/dev/null); fi
[ -n "$PATCHES" ] || { echo "patch-faults: no faults/*.patch" >&2; exit 1; }

log() { echo "patch-faults: $*" >&2; }

num() { # num FILE KEY: a number member of a one-line JSON file
	sed -n "s/.*\"$2\":\(-\{0,1\}[0-9.]*\).*/\1/p" "$1" | head -1
}

# The first new distinct failure of a summary.json: "FIRST_CASE KEY DEFS STATE", or nothing.
first_new() {
	sed 's/.*"failures":\[//; s/\]}$//; s/},{/}\n{/g' "$1" | grep '"known":false' |
		sed -n 's/.*"key":"\([^"]*\)".*"first_case":\([0-9]*\).*"defs":\(-\{0,1\}[0-9]*\).*"state":"\([a-z]*\)".*/\2 \1 \3 \4/p' |
		sort -n | head -1
}

# ---------------------------------------------------------------- the unpatched tree
# A copy of the working tree (tracked and untracked files git does not ignore, so
# uncommitted work is measured too), built once; each patched tree is a copy of it, build
# folder included, so a patch rebuilds only what it touches.
BASE=$OUT/trees/base
SRCID=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
if [ ! -x "$BASE/assay" ]; then
	log "copying $ROOT ($SRCID) to $BASE and building it"
	rm -rf "$BASE" && mkdir -p "$BASE" || exit 1
	(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | (cd "$BASE" && tar -xf -) || { log "cannot copy the tree"; exit 1; }
	if ! make -C "$BASE" -j"$MAKEJ" assay >"$OUT/build-base.log" 2>&1; then
		log "the unpatched tree does not build: $OUT/build-base.log"
		exit 1
	fi
fi

# ---------------------------------------------------------------- the control campaign
SETTINGS="--cases $CASES --jobs $JOBS --backends $BACKENDS --seed $SEED --reduce-tests $REDUCE_TESTS"
if [ -f "$CONTROL/settings.json" ]; then
	log "control campaign $CONTROL: resuming it to $CASES cases"
	# shellcheck disable=SC2086
	"$BASE/assay" fuzz --quiet --resume "$CONTROL" $SETTINGS >"$OUT/control.out" 2>"$OUT/control.err"
else
	log "control campaign $CONTROL: $CASES cases of the unpatched tree"
	# shellcheck disable=SC2086
	"$BASE/assay" fuzz --quiet $SETTINGS -o "$CONTROL" >"$OUT/control.out" 2>"$OUT/control.err"
fi
rc=$?
if [ $rc -eq 2 ] || [ ! -f "$CONTROL/summary.json" ]; then
	log "the control campaign failed (exit $rc): $(head -c 400 "$OUT/control.err")"
	exit 1
fi
ccases=$(num "$CONTROL/summary.json" cases)
cdist=$(num "$CONTROL/summary.json" distinct)
if [ "$ccases" -lt "$CASES" ]; then
	log "the control campaign has $ccases cases of $CASES (interrupted?): $CONTROL"
	exit 1
fi

# ---------------------------------------------------------------- each fault
TABLE=$OUT/table.txt
TSV=$OUT/results.tsv
printf 'fault\tresult\tcases\tseconds\tdefs\tbackend\tsignature\texamples_failing\n' >"$TSV"
row() { # row FAULT RESULT CASES SECONDS DEFS BACKEND SIGNATURE EXAMPLES
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$TSV"
	printf '%-30s %-12s %6s %8s %5s %-7s %-9s %s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$8" "$7" | tee -a "$TABLE"
}
{
	echo "patch faults of $SRCID: $CASES cases, $JOBS jobs, backends $BACKENDS, seed $SEED"
	echo "control: $CONTROL ($ccases cases, $cdist distinct failures known)"
	echo
} | tee "$TABLE"
printf '%-30s %-12s %6s %8s %5s %-7s %-9s %s\n' fault result cases seconds defs backend examples \
	"first new failure" | tee -a "$TABLE"

all_ran=0
for p in $PATCHES; do
	name=$(basename "$p" .patch)
	p=$(cd "$(dirname "$p")" && pwd)/$(basename "$p")
	tree=$OUT/trees/$name camp=$OUT/campaigns/$name
	rm -rf "$tree" "$camp" "$camp.err" "$camp.out"
	cp -a "$BASE" "$tree" || { log "cannot copy $BASE"; exit 1; }
	if ! (cd "$tree" && patch -p1 -F0 --dry-run --batch -s <"$p") >"$OUT/$name.apply.log" 2>&1; then
		row "$name" not-applied - - - - "rebase the patch: $(head -c 120 "$OUT/$name.apply.log" | tr '\n' ' ')" -
		all_ran=1
		rm -rf "$tree"
		continue
	fi
	(cd "$tree" && patch -p1 -F0 --batch -s <"$p") >>"$OUT/$name.apply.log" 2>&1
	if ! make -C "$tree" -j"$MAKEJ" assay >"$OUT/$name.build.log" 2>&1; then
		row "$name" build-failed - - - - "see $OUT/$name.build.log" -
		all_ran=1
		[ "$KEEP_TREES" = 1 ] || rm -rf "$tree"
		continue
	fi
	ex=-
	if [ "$EXAMPLES" = 1 ]; then
		(cd "$tree" && ./assay check examples/*.tg --backends "$BACKENDS") >"$OUT/$name.examples.txt" 2>&1
		ex=$(sed -n 's/^\([0-9]*\) results*: [0-9]* pass, \([0-9]*\) failing.*/\2\/\1/p' "$OUT/$name.examples.txt" | tail -1)
		[ -n "$ex" ] || ex=error
	fi
	lim=""
	[ "$LIMIT_S" != 0 ] && lim="timeout -s TERM $LIMIT_S"
	# shellcheck disable=SC2086
	(cd "$tree" && $lim ./assay fuzz --quiet $SETTINGS --until-failure --baseline "$CONTROL" \
		-o "$camp") >"$camp.out" 2>"$camp.err"
	rc=$?
	s=$camp/summary.json
	if [ ! -f "$s" ] || [ $rc -eq 2 ]; then
		row "$name" error - - - - "exit $rc: $(head -c 150 "$camp.err" | tr '\n' ' ')" "$ex"
		all_ran=1
	else
		cases=$(num "$s" cases)
		first=$(first_new "$s")
		if [ -n "$first" ]; then
			set -- $first
			t=$(num "$s" first_fail_s)
			row "$name" killed $(($1 + 1)) "$t" "$3" "${2%%/*}" "$2" "$ex"
		else
			why=survived
			[ "$(sed -n 's/.*"interrupted":\(true\).*/\1/p' "$s")" = true ] && why=survived-lim
			row "$name" "$why" "$cases" "$(num "$s" elapsed_s)" - - \
				"(known: $(num "$s" known), errors: $(num "$s" errors))" "$ex"
		fi
	fi
	[ "$KEEP_TREES" = 1 ] || rm -rf "$tree"
done

killed=$(awk -F'\t' 'NR > 1 && $2 == "killed"' "$TSV" | wc -l)
ran=$(awk -F'\t' 'NR > 1 && ($2 == "killed" || $2 ~ /^survived/)' "$TSV" | wc -l)
med() { sort -g | awk '{v[NR]=$1} END {if (!NR) print "-"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
mc=$(awk -F'\t' 'NR > 1 && $2 == "killed" {print $3}' "$TSV" | med)
ms=$(awk -F'\t' 'NR > 1 && $2 == "killed" {print $4}' "$TSV" | med)
{
	echo
	echo "killed $killed of $ran faults that ran (target: 90% within $CASES cases); median $mc cases, $ms s to kill"
	echo "everything is in $OUT (table.txt, results.tsv, campaigns/, the logs)"
} | tee -a "$TABLE"
exit $all_ran

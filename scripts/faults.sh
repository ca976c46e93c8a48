#!/bin/sh
# scripts/faults.sh: the measure of the fuzzer (`make faults`). For each seeded compiler
# fault (assay fuzz --list-faults), a fresh, short campaign with that fault switched on
# (ASSAY_FAULT=name), stopped at the first distinct failure the fault is implicated in, once
# reduced; then a control campaign with no fault, which must report no failure. Prints, per
# fault: killed or survived, the time to the first kill, the cases run, the definitions of
# the reduced repro and the reduction's time; then the targets of issue 4 beside the figures.
#
# Usage: sh scripts/faults.sh [ASSAY]   (environment: FAULT_SECONDS=60 JOBS=2 BACKEND=c
#        SEED=1 CONTROL_SECONDS=60 (0: no control campaign) FAULTS="names..." KEEP=dir to keep
#        the campaigns)
ASSAY=${1:-./assay}
SECONDS_MAX=${FAULT_SECONDS:-60}
JOBS=${JOBS:-2}
BACKEND=${BACKEND:-c}
SEED=${SEED:-1}
CONTROL=${CONTROL_SECONDS:-60}
FAULTS=${FAULTS:-$($ASSAY fuzz --list-faults)}
TMP=${KEEP:-$(mktemp -d /tmp/assay-faults.XXXXXX)}
mkdir -p "$TMP"

num() { # num FILE KEY: a number member of a one-line JSON file
	sed -n "s/.*\"$2\":\(-\{0,1\}[0-9.]*\).*/\1/p" "$1" | head -1
}

printf '%-15s %-9s %9s %7s %10s %9s  %s\n' fault verdict "kill (s)" cases "repro defs" "reduce s" "failure"
times=""; killed=0; total=0; worst=0; big=0
for f in $FAULTS; do
	total=$((total + 1))
	dir="$TMP/$f"
	rm -rf "$dir"
	# a derivation fault (grad_*) is seen by campaigns that judge gradients (docs/grad.md)
	grad=""
	case $f in grad_*) grad=--grad ;; esac
	ASSAY_FAULT=$f $ASSAY fuzz --quiet --until-failure --seconds "$SECONDS_MAX" --jobs "$JOBS" \
		--backends "$BACKEND" --seed "$SEED" $grad -o "$dir" >/dev/null 2>"$dir.err"
	s="$dir/summary.json"
	if [ ! -f "$s" ]; then
		printf '%-15s %-9s  (the campaign failed: %s)\n' "$f" error "$(head -c 200 "$dir.err")"
		continue
	fi
	t=$(num "$s" first_kill_s); cases=$(num "$s" cases); defs=$(num "$s" kill_defs)
	rs=$(num "$s" kill_reduce_s)
	key=$(sed -n 's/.*"key":"\([^"]*\)","output":"[^"]*","count":[0-9]*,"first_case":[0-9]*,"kill":true.*/\1/p' "$s" | head -1)
	if awk "BEGIN{exit !($t >= 0)}"; then
		killed=$((killed + 1)); times="$times $t"
		awk "BEGIN{exit !($t > $worst)}" && worst=$t
		[ "$defs" -gt 4 ] 2>/dev/null && big=$((big + 1))
		printf '%-15s %-9s %9.1f %7s %10s %9.1f  %s\n' "$f" killed "$t" "$cases" "$defs" "$rs" "$key"
	else
		printf '%-15s %-9s %9s %7s %10s %9s\n' "$f" SURVIVED "-" "$cases" "-" "-"
	fi
done
median=$(echo $times | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END{if (NR==0) print "-"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}')

echo
echo "killed $killed of $total faults (target: all)"
echo "median time to kill ${median} s (target <= 10 s); slowest ${worst} s (target <= 60 s)"
echo "kills reduced to more than 4 definitions: $big (target: 0)"
if [ "$CONTROL" != 0 ]; then
	dir="$TMP/control"
	rm -rf "$dir"
	$ASSAY fuzz --quiet --seconds "$CONTROL" --jobs "$JOBS" --backends "$BACKEND" --seed "$SEED" \
		-o "$dir" >/dev/null 2>"$dir.err"
	cdist=$(num "$dir/summary.json" distinct); ccases=$(num "$dir/summary.json" cases)
	cerr=$(num "$dir/summary.json" errors)
	echo "control (no fault, ${CONTROL} s): $ccases cases, ${cdist} distinct failures, $cerr errors (target: 0 failures)"
	if [ "${cdist:-0}" -gt 0 ]; then
		echo "control failures (false alarms; each folder holds a reduced repro):"
		for x in "$dir"/failures/*; do [ -d "$x" ] && echo "  $x"; done
	fi
fi
echo "campaigns kept in $TMP (backend $BACKEND, $JOBS jobs, seed $SEED, at most ${SECONDS_MAX} s each)"
[ "$killed" -eq "$total" ]

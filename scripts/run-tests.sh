#!/bin/sh
# Runs every Check suite given, prints each suite's own summary and a closing total line.
# Exits non-zero if any suite failed or crashed.
B=$1; shift
pass=0; fail=0; failed=""
for t in "$@"; do
	name=$(basename "$t")
	out=$(CK_FORK=yes "$t" 2>&1); rc=$?
	echo "$out" | grep -E '^[0-9]+%: Checks' | sed "s/^/$name: /"
	n=$(echo "$out" | sed -n 's/^[0-9]*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' | awk '{c+=$1; f+=$2+$3} END {print c+0, f+0}')
	c=${n% *}; f=${n#* }
	pass=$((pass + c - f)); fail=$((fail + f))
	if [ $rc -ne 0 ] || [ "$f" -ne 0 ]; then
		echo "$out" | grep -vE '^[0-9]+%: Checks|^Running suite' | head -40
		failed="$failed $name"
		[ "$f" -eq 0 ] && fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ -z "$failed" ] || { echo "failing suites:$failed"; exit 1; }

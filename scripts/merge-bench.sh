#!/usr/bin/env bash
# Measures `assay merge` on synthetic shards (docs/scale.md quotes it):
#   scripts/merge-bench.sh [SHARDS [CASES_PER_SHARD [ASSAY]]]     (default 4 2500 ./assay)
# A real shard (0/2 of 4 cases on c) gives the settings and the record lines; each
# synthetic shard repeats them (3 records and a done line per case, renumbered, every 50th
# case failing with one of 9 keys) for CASES_PER_SHARD cases. Prints the records, bytes,
# wall and CPU seconds of the merge, records/s and MB/s. PERF="perf record -g" profiles it.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-4}
K=${2:-2500}
ASSAY=$(realpath "${3:-./assay}")
T=$(mktemp -d /tmp/assay-merge-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$ASSAY" fuzz --shard 0/2 --cases 4 --backends c --seed 1 --variants 0 --no-reduce --quiet \
	-o "$T/real" >/dev/null || [ $? -le 1 ]
python3 - "$T" "$N" "$K" <<'PY'
import json, os, re, sys
t, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
settings = open(f"{t}/real/settings.json").read()
recs = [l for l in open(f"{t}/real/results.jsonl") if not l.startswith('{"done"')]
done = [l for l in open(f"{t}/real/results.jsonl") if l.startswith('{"done"')][0]
recs = (recs * 3)[:3]
for i in range(n):
    d = f"{t}/s{i}"
    os.makedirs(d)
    open(f"{d}/settings.json", "w").write(settings.replace('"shard":"0/2"', f'"shard":"{i}/{n}"'))
    with open(f"{d}/results.jsonl", "w") as f:
        for j in range(k):
            c = i + j * n
            for r in recs:
                f.write(re.sub(r'"case":\d+', f'"case":{c}', r))
            keys = [f"c/{v}/{d}/-/-" for v in ("over-budget", "special-mismatch")
                    for d in ("f16", "bf16", "f32", "f64")] + ["c/crash/-/-/-"]
            fails = f'["{keys[c // 50 % len(keys)]}@d0"]' if c % 50 == 0 else "[]"
            line = re.sub(r'^\{"done":\d+', '{"done":%d' % c, done)
            f.write(re.sub(r'"fails":\[[^\]]*\]', '"fails":' + fails, line))
PY
bytes=$(cat "$T"/s*/results.jsonl | wc -c)
TIMEFORMAT="%R %U %S"
{ time ${PERF:-} "$ASSAY" merge "$T"/s* -o "$T/merged" >"$T/out"; } 2>"$T/time"
cat "$T/out"
python3 - "$(cat "$T/time")" "$bytes" "$N" "$K" <<'PY'
import sys
wall, user, sys_ = map(float, sys.argv[1].split()[-3:])
b, n, k = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cpu, r = user + sys_, 3 * n * k
print(f"merge-bench: {n} shards x {k} cases, {r} records, {b / 1e6:.1f} MB: {wall:.2f} s wall, "
      f"{cpu:.2f} s CPU: {r / wall:,.0f} records/s ({r / cpu:,.0f} per CPU second), "
      f"{b / 1e6 / wall:.1f} MB/s")
PY

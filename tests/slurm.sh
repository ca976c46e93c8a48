#!/usr/bin/env bash
# tests/slurm.sh (run by `make check`): a 4-shard campaign through scripts/slurm-campaign.sh
# on a one-node Slurm started here, its merge checked against the unsharded campaign.
#
# The cluster lives in a temporary directory: a munge key and munged on a socket of its
# own, a slurm.conf written here (SlurmctldHost and the one node localhost with 2 CPUs,
# proctrack/linuxproc, task/none, select/cons_tres, state and spool in the directory, ports
# of their own, SlurmUser root), slurmctld and slurmd started with -f on it. Every daemon
# is stopped by its pid whatever happens (trap), and nothing outside the directory is
# touched. Needs root (slurmd starts jobs as their user) and the Slurm and munge programs
# (scripts/deps.sh installs them): without them the test FAILS, it is never skipped.
#
# The campaign: 12 cases on c with a seeded fault (ASSAY_FAULT=skip_last, so there are
# failures to merge and deduplicate), 4 shards of 3 cases, unreduced, no variants; the
# merge job merges, reports and gates (examples/campaign.policy). Checked: the merge's log
# is the unsharded campaign's, timings aside; the same failure folders and repros; the
# report written; the gate's verdict the unsharded campaign's; a second submission (what a
# requeue does) resumes the finished shards without changing them and keeps the merge.
set -u
cd "$(dirname "$0")/.."
PATH=$PATH:/usr/sbin:/sbin
ASSAY=$(realpath "${ASSAY:-./assay}")
fail() { echo "tests/slurm.sh: FAIL: $*" >&2; exit 1; }
[ -x "$ASSAY" ] || fail "$ASSAY is not there: build it first (make)"
[ "$(id -u)" -eq 0 ] || fail "needs root: slurmd starts the jobs as their user (run make check as root, as CI does)"
for p in munged mungekey slurmctld slurmd sbatch squeue sinfo scontrol python3; do
	command -v "$p" >/dev/null || fail "$p is not installed: run scripts/deps.sh (Debian: slurm-wlm, munge)"
done

T=$(mktemp -d /tmp/assay-slurm.XXXXXX)
t0=$(date +%s)
export SLURM_CONF=$T/slurm.conf
pids=()   # the daemons, run in the foreground as children of this script
stop() {
	rc=$?
	[ ${#pids[@]} -gt 1 ] && scontrol shutdown >/dev/null 2>&1
	for i in $(seq 1 50); do   # until none is alive (5 s at most), then killed
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive -eq 0 ] && break
		[ $i -eq 10 ] && [ ${#pids[@]} -gt 0 ] && kill "${pids[0]}" 2>/dev/null   # munged
		sleep 0.1
	done
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if [ $rc -ne 0 ]; then
		echo "tests/slurm.sh: the daemons' logs (tails):" >&2
		tail -n 15 "$T"/log/*.log "$T"/munge/munged.log "$T"/camp/slurm/*.out 2>/dev/null >&2
	fi
	rm -rf "$T"
	exit $rc
}
trap stop EXIT
trap 'exit 1' INT TERM

# ---------------------------------------------------------------- munge
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log"
chmod 0755 "$T" "$T/munge"   # munged wants its socket's folders searchable
mungekey --create --keyfile="$T/munge/munge.key" >/dev/null 2>&1 ||
	dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 0400 "$T/munge/munge.key"
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/socket" \
	--pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" \
	--seed-file="$T/munge/seed" >>"$T/log/munged.out" 2>&1 &
pids+=($!)
for i in $(seq 1 50); do [ -S "$T/munge/socket" ] && break; sleep 0.1; done
echo probe | munge -S "$T/munge/socket" | unmunge -S "$T/munge/socket" >/dev/null ||
	fail "munge cannot encode and decode a credential"

# ---------------------------------------------------------------- slurm
port=$((20000 + $$ % 20000))
cat >"$SLURM_CONF" <<EOF
ClusterName=assaytest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/socket
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName=localhost CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >>"$T/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N localhost >>"$T/log/slurmd.out" 2>&1 &
pids+=($!)
for i in $(seq 1 100); do
	state=$(sinfo -h -N -o %T 2>/dev/null)
	[ "$state" = idle ] && break
	sleep 0.2
done
[ "$state" = idle ] || fail "the node did not come up (sinfo: '$state')"

# ---------------------------------------------------------------- the campaign
export ASSAY_FAULT=skip_last
FLAGS=(--backends c --seed 7 --no-reduce --variants 0)
"$ASSAY" fuzz --cases 12 --no-feedback --jobs 2 --quiet -o "$T/whole" "${FLAGS[@]}" >/dev/null
[ $? -le 1 ] || fail "the unsharded campaign failed"
"$ASSAY" gate "$T/whole" --policy examples/campaign.policy >"$T/gate-whole.txt"
gw=$?

run_script() {
	timeout 300 bash scripts/slurm-campaign.sh -o "$T/camp" --shards 4 --cases 12 --jobs 1 \
		--assay "$ASSAY" --policy examples/campaign.policy --wait -- "${FLAGS[@]}"
}
run_script
st=$?
[ $st -eq $gw ] || fail "the merge job's status is $st, the unsharded campaign's gate $gw"
for i in 0 1 2 3; do
	grep -q "\"shard\":\"$i/4\"" "$T/camp/shards/$i/settings.json" || fail "shard $i/4 has no settings"
done
strip() {
	python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1] + "/results.jsonl"):
    r = json.loads(line)
    r.pop("timings", None)
    for k in [k for k in r if k.endswith("_s")]:
        r.pop(k)
    print(json.dumps(r, sort_keys=True))
PY
}
strip "$T/whole" >"$T/whole.log"
strip "$T/camp/merged" >"$T/merged.log"
[ "$(grep -c '"done"' "$T/merged.log")" -eq 12 ] || fail "the merge does not hold 12 cases"
cmp -s "$T/whole.log" "$T/merged.log" || fail "the merge's log is not the unsharded campaign's: $(diff "$T/whole.log" "$T/merged.log" | head -5)"
(cd "$T/whole/failures" && ls) >"$T/fw"
(cd "$T/camp/merged/failures" && ls) >"$T/fm"
[ -s "$T/fw" ] || fail "the unsharded campaign found no failure: the fault does not show"
cmp -s "$T/fw" "$T/fm" || fail "other failure folders: $(diff "$T/fw" "$T/fm")"
while read -r f; do
	for x in repro.tg signature count; do
		cmp -s "$T/whole/failures/$f/$x" "$T/camp/merged/failures/$f/$x" || fail "failures/$f/$x differs"
	done
done <"$T/fw"
[ -s "$T/camp/report/report.md" ] || fail "the merge job wrote no report"
tail -n +2 "$T/gate-whole.txt" >"$T/gw"
tail -n +2 "$T/camp/gate.txt" >"$T/gm"
cmp -s "$T/gw" "$T/gm" || fail "the gate judges the merge otherwise: $(diff "$T/gw" "$T/gm")"

# a second submission (what a requeue of every task does): the shards resume, unchanged
sum() { (cd "$T/camp" && find shards merged -name results.jsonl | LC_ALL=C sort | xargs md5sum); }
before=$(sum)
run_script >/dev/null
st=$?
[ $st -eq $gw ] || fail "the resubmitted merge job's status is $st, not $gw"
[ "$(sum)" = "$before" ] || fail "a resubmission changed a shard or the merge"
grep -q "restart" "$T/camp/slurm/shard-0.out" && [ "$(grep -c "^shard 0/4 on" "$T/camp/slurm/shard-0.out")" -eq 2 ] ||
	fail "shard 0 did not run twice (its log: $(cat "$T/camp/slurm/shard-0.out"))"
echo "tests/slurm.sh: 4-shard campaign on a one-node Slurm merged into the unsharded campaign ($(wc -l <"$T/fw") distinct failures, gate exit $gw) in $(($(date +%s) - t0)) s"

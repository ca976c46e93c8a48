#!/usr/bin/env bash
# Runs a fuzz campaign on a Slurm cluster: one job array of N tasks, task I running shard
# I/N of the campaign (`assay fuzz --shard I/N`, or `--resume` when the task is requeued or
# the script run again), and one job that depends on the whole array (afterok) and merges
# the shards (`assay merge`), reports on the merge (`assay report`) and, with --policy,
# gates it (`assay gate`).
#
#   scripts/slurm-campaign.sh -o DIR --shards N --cases C [--jobs J] [--assay PATH]
#       [--partition P] [--time T] [--max-running K] [--policy FILE] [--sbatch ARG]...
#       [--wait] [--dry-run] [-- FUZZ_FLAGS...]
#
# DIR must be on a file system every node sees (NFS, Lustre, GPFS...): the script writes
# DIR/slurm/ (the task scripts, their logs, the job ids), each task DIR/shards/I/ (a
# campaign directory of its own: shards never share a file), the merge job DIR/merged/ (a
# campaign directory: `assay report`, `assay gate`, `assay fuzz --resume` take it),
# DIR/report/ and DIR/gate.txt. FUZZ_FLAGS go to `assay fuzz` for a new shard (--backends,
# --seed, --inputs, --no-reduce, --variants, ...); a resumed shard keeps its settings.
# --cases is required: the merge needs every case below it in some shard (a campaign cut
# by time would leave shards of unequal lengths). Slurm's MaxArraySize (1001 unless the
# cluster raises it) caps --shards at 1000. --jobs J: job processes per task, and
# the CPUs each task asks for (--cpus-per-task). ASSAY_FAULT and the rest of the
# environment reach the tasks (sbatch exports it).
#
# Exit codes of the tasks: a shard that found failures still succeeds (its exit 1 is a
# verdict for the report, not a failed task); 2 (bad input) and 3 (the environment) fail
# the task, and then the merge job never runs (afterok; --kill-on-invalid-dep removes it).
# Run the script again to resubmit: finished shards return at once, others resume.
# --wait: wait for the merge job to leave the queue and exit with its status (0: merged,
# reported, and every gate holds). --dry-run: print the sbatch commands only.
set -euo pipefail

die() { echo "slurm-campaign: $*" >&2; exit 2; }

DIR="" SHARDS="" CASES="" JOBS=1 ASSAY="" PARTITION="" TIME="" MAXRUN="" POLICY=""
WAIT=0 DRY=0
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    -o) DIR=${2:?-o needs a directory}; shift 2 ;;
    --shards) SHARDS=${2:?--shards needs a count}; shift 2 ;;
    --cases) CASES=${2:?--cases needs a count}; shift 2 ;;
    --jobs) JOBS=${2:?--jobs needs a count}; shift 2 ;;
    --assay) ASSAY=${2:?--assay needs a path}; shift 2 ;;
    --partition) PARTITION=${2:?--partition needs a name}; shift 2 ;;
    --time) TIME=${2:?--time needs a limit}; shift 2 ;;
    --max-running) MAXRUN=${2:?--max-running needs a count}; shift 2 ;;
    --policy) POLICY=${2:?--policy needs a file}; shift 2 ;;
    --sbatch) EXTRA+=("${2:?--sbatch needs an argument}"); shift 2 ;;
    --wait) WAIT=1; shift ;;
    --dry-run) DRY=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (fuzz flags go after --; see --help)" ;;
  esac
done
FUZZ=("$@")

isnum() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; }
[ -n "$DIR" ] || die "-o DIR is required (a directory on a file system every node sees)"
isnum "$SHARDS" || die "--shards expects a count of at least 1, got '$SHARDS'"
isnum "$CASES" || die "--cases expects a count of at least 1, got '$CASES' (a sharded campaign is cut by cases)"
isnum "$JOBS" && [ "$JOBS" -le 64 ] || die "--jobs expects a count in 1..64, got '$JOBS'"
[ "$SHARDS" -le 1048576 ] || die "--shards: at most 1048576 shards, got $SHARDS"
[ -z "$MAXRUN" ] || isnum "$MAXRUN" || die "--max-running expects a count of at least 1, got '$MAXRUN'"
for f in "${FUZZ[@]}"; do
  case "$f" in
    --shard|--shard=*|-o|-o=*|--resume|--resume=*|--cases|--cases=*|--seconds|--seconds=*|--jobs|--jobs=*)
      die "$f is the script's to give (the shard, its directory and the stop rule)" ;;
  esac
done
if [ -z "$ASSAY" ]; then ASSAY=$(command -v assay || true); fi
[ -n "$ASSAY" ] && [ -x "$ASSAY" ] || die "no assay program (give --assay PATH, on the shared file system)"
ASSAY=$(realpath "$ASSAY")
DIR=$(realpath -m "$DIR")
if [ -n "$POLICY" ]; then
  [ -r "$POLICY" ] || die "--policy $POLICY: not a readable file"
  POLICY=$(realpath "$POLICY")
fi
command -v sbatch >/dev/null || [ $DRY -eq 1 ] || die "sbatch is not on PATH (is this a Slurm login node?)"

q() { printf '%q' "$1"; }
FUZZQ=""
for f in "${FUZZ[@]}"; do FUZZQ+=" $(q "$f")"; done
S="$DIR/slurm"
mkdir -p "$S" "$DIR/shards"

# The task of the array: shard $SLURM_ARRAY_TASK_ID, new or resumed.
cat >"$S/shard.sh" <<EOF
#!/usr/bin/env bash
# made by scripts/slurm-campaign.sh: shard \$SLURM_ARRAY_TASK_ID/$SHARDS of $(q "$DIR")
set -u
I=\${SLURM_ARRAY_TASK_ID:?run as a task of the job array}
D=$(q "$DIR/shards")/\$I
echo "shard \$I/$SHARDS on \$(hostname), restart \${SLURM_RESTART_COUNT:-0}, \$(date -u +%FT%TZ)"
if [ -f "\$D/settings.json" ]; then
  $(q "$ASSAY") fuzz --resume "\$D" --cases $CASES --jobs $JOBS --quiet
else
  $(q "$ASSAY") fuzz --shard "\$I/$SHARDS" --cases $CASES --jobs $JOBS --quiet -o "\$D"$FUZZQ
fi
rc=\$?
echo "shard \$I/$SHARDS: assay fuzz exited \$rc"
# 1 is a verdict (failures found), for the merge and the report; 2 and 3 fail the task
[ \$rc -le 1 ] && exit 0
exit \$rc
EOF

# The job after the array: merge, report, gate. A merge already made (atomic) is kept.
cat >"$S/merge.sh" <<EOF
#!/usr/bin/env bash
# made by scripts/slurm-campaign.sh: merges the $SHARDS shards of $(q "$DIR")
set -u
cd $(q "$DIR")
run() {
  "\$@"; local rc=\$?
  [ \$rc -eq 0 ] || { echo \$rc >slurm/merge.status; echo "merge job: '\$*' exited \$rc"; exit \$rc; }
}
[ -d merged ] || run $(q "$ASSAY") merge shards/* -o merged
run $(q "$ASSAY") report merged -o report
if [ -n $(q "$POLICY") ]; then
  $(q "$ASSAY") gate merged --policy $(q "$POLICY") >gate.txt; rc=\$?
  cat gate.txt
  echo \$rc >slurm/merge.status
  exit \$rc
fi
echo 0 >slurm/merge.status
EOF
chmod +x "$S/shard.sh" "$S/merge.sh"
rm -f "$S/merge.status"

ARR=(--parsable --job-name=assay-fuzz --array="0-$((SHARDS - 1))${MAXRUN:+%$MAXRUN}"
     --cpus-per-task="$JOBS" --ntasks=1 --requeue --open-mode=append -o "$S/shard-%a.out")
MRG=(--parsable --job-name=assay-merge --cpus-per-task=1 --ntasks=1 --kill-on-invalid-dep=yes
     --open-mode=append -o "$S/merge.out")
[ -z "$PARTITION" ] || { ARR+=(--partition="$PARTITION"); MRG+=(--partition="$PARTITION"); }
[ -z "$TIME" ] || { ARR+=(--time="$TIME"); MRG+=(--time="$TIME"); }
if [ $DRY -eq 1 ]; then
  echo "sbatch ${ARR[*]} ${EXTRA[*]} $S/shard.sh"
  echo "sbatch ${MRG[*]} --dependency=afterok:ARRAY_ID ${EXTRA[*]} $S/merge.sh"
  exit 0
fi
array=$(sbatch "${ARR[@]}" "${EXTRA[@]}" "$S/shard.sh")
array=${array%%;*}
merge=$(sbatch "${MRG[@]}" --dependency="afterok:$array" "${EXTRA[@]}" "$S/merge.sh")
merge=${merge%%;*}
printf 'array %s\nmerge %s\n' "$array" "$merge" >"$S/jobs"
echo "slurm-campaign: job array $array ($SHARDS shards of $CASES cases), merge job $merge; $DIR"
[ $WAIT -eq 1 ] || exit 0

while [ -n "$(squeue -h -j "$merge" 2>/dev/null || true)" ]; do sleep 2; done
if [ ! -f "$S/merge.status" ]; then
  echo "slurm-campaign: the merge job $merge ended without merging: a shard task failed (see $S/shard-*.out, $S/merge.out)" >&2
  exit 1
fi
st=$(cat "$S/merge.status")
echo "slurm-campaign: merge job $merge exited $st; the merge $DIR/merged, its report $DIR/report"
exit "$st"

#!/usr/bin/env bash
# The cuda backend's run on a GPU machine (the H200 reached through the device tool). It
# builds nothing: ./assay and B/tests/test_cuda are built on the development machine and
# carried, together with the shared libraries they need that the GPU machine may lack.
# (B/assay, not ./assay: the folder's own program.)
#
#   scripts/device-cuda.sh --pack [B]   here: copies those libraries into .device-libs/
#                                       (ignored by git) and prints what to carry
#   scripts/device-cuda.sh [B]          there: prints the device, runs the Check suite
#                                       test_cuda (cuda against c on every example) and
#                                       `assay check` over every example on c and cuda with
#                                       2 sampled schedules, then a summary table
# B is the build folder (default: build). Exit status: 0 when both pass.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --pack ]; then
  B=${2:-build}
  mkdir -p .device-libs
  ldd "$B/assay" "$B/tests/test_cuda" | awk '/=> \// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt)\.so' |
    while read -r lib; do cp -L "$lib" .device-libs/; done
  exclude=$(git rev-parse --git-path info/exclude)
  grep -qx '/.device-libs/' "$exclude" 2>/dev/null || echo '/.device-libs/' >>"$exclude"
  echo "packed: $(ls .device-libs | tr '\n' ' ')"
  echo "carry: $B/assay $B/tests/test_cuda .device-libs"
  exit 0
fi

B=${1:-build}
for f in "$B/assay" "$B/tests/test_cuda"; do
  [ -x "$f" ] || { echo "device-cuda: $f is missing: build it here and carry it"; exit 2; }
done
# the carried libraries only where the machine lacks its own
if ldd "$B/assay" "$B/tests/test_cuda" | grep -q 'not found'; then
  export LD_LIBRARY_PATH="$PWD/.device-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/assay-cache}
log=${OUT:-/tmp}

echo "== device"
nvidia-smi -L 2>/dev/null || echo "(no nvidia-smi)"
"$B/assay" backends

echo "== test_cuda"
CK_FORK=yes "$B/tests/test_cuda" >"$log/test_cuda.log" 2>&1
test_rc=$?
grep -E '^(SKIP|[0-9]+%: Checks)|:[0-9]+:[EF]:' "$log/test_cuda.log"
grep -E 'worst [0-9]+ ulps' "$log/test_cuda.log" | sort -t' ' -k1,1 | awk '
  { n++; w = $(NF-1) + 0; if (w > max) { max = w; at = $0 } }
  END { if (n) printf "%d outputs compared with c; largest distance: %s\n", n, at }'

echo "== assay check examples/*.tg --backends c,cuda --schedules 2"
"$B/assay" check examples/*.tg --backends c,cuda --schedules 2 --threads "$(nproc)" \
  >"$log/check.log" 2>&1
check_rc=$?
cat "$log/check.log"

echo "== summary (passing results / results, per example and backend)"
awk 'NR > 1 && NF >= 7 && $2 ~ /^(c|cuda)$/ {
       k = $1; seen[k] = 1; tot[k, $2]++; if ($5 == "pass") ok[k, $2]++
     }
     END {
       printf "%-18s %-10s %-10s\n", "example", "c", "cuda"
       for (k in seen)
         printf "%-18s %-10s %-10s\n", k, (ok[k, "c"] + 0) "/" (tot[k, "c"] + 0),
                (ok[k, "cuda"] + 0) "/" (tot[k, "cuda"] + 0)
     }' "$log/check.log" | { read -r h; echo "$h"; sort; }
echo "test_cuda exit $test_rc, assay check exit $check_rc"
[ $test_rc -eq 0 ] && [ $check_rc -eq 0 ]

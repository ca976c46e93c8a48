#!/usr/bin/env bash
# scripts/device-run.sh: assay on a GPU machine (the H200 reached through the device tool).
# That machine builds nothing: the binaries are built here and carried, with the shared
# libraries it lacks (libmpfr, libgmp, libsubunit, the Vulkan loader, a usable libshaderc)
# and the glvnd/Vulkan .debs its NVIDIA Vulkan driver needs (the device README's recipe).
# That machine has no Node.js: for the wgsl backend, `--pack` also makes .wgpack.tar.xz (this
# machine's node binary and the project's node_modules, Linux x64 Dawn only: ~29 MB; made once,
# it takes minutes), unpacked there into /tmp/wgpack.
#
#   scripts/device-run.sh --pack [B]    here: builds B (default build) with the test and bench
#                                       programs, copies them and the libraries into .devpack/
#                                       (ignored by git), fetches the .debs into .gl/ if missing,
#                                       and prints what to carry (.devpack and .gl)
#   scripts/device-run.sh [STEP...]     there: sets up OpenCL (NVIDIA's ICD) and Vulkan
#                                       (VK_DRIVER_FILES), then runs the steps, in order:
#     backends   `assay backends`
#     check      `assay check examples/*.tg tests/regress/*.tg` on c, opencl, vulkan, cuda and
#                wgsl with $SCHEDULES (default 2) sampled schedules, then one table: passing
#                results / results per example and backend
#     tests      the Check suites test_cuda, test_opencl, test_vulkan and test_wgsl
#     bench      bench_gpu (kernel times beside C, the derived matmul/softmax/layernorm
#                beside cuBLAS and copy bandwidth) and bench_ulp on the GPU backends;
#                $BENCH_OTHERS (e.g. opencl,vulkan): the derived kernels there too (matmul
#                at $BENCH_OTHERS_MATMUL, default 1024)
#     gradcheck  every example's gradient graph (`assay grad`) checked on $GRAD_BACKENDS (cuda)
#     probe      `assay probe` on every backend ($BACKENDS, space-separated) under the default,
#                pairwise and split schedules, $PROBE_N (32) terms: each kernel's summation tree
#                beside the one its schedule declares
#     decode     `assay decode examples/qwen3_tiny` for $DECODE_STEPS (default 32) steps on every
#                available backend, default and $DECODE_SCHEDULES (1) sampled schedules, its gate
#     fuzz       a $FUZZ_SECONDS (default 60) campaign over every available backend, then
#                `assay report` on it
#     script     sh $SCRIPT ASSAY in this environment (a device experiment)
#     campaign   `assay fuzz --cases $CAMPAIGN_CASES` (default 600) with every core, seed $SEED
#                (default 5) and $CAMPAIGN_ARGS, over every available backend, then its report,
#                in /tmp/campaign$CAMPAIGN_TAG; its failures, settings, summary and report come
#                back as campaign$CAMPAIGN_TAG.tar.xz, its log as results$CAMPAIGN_TAG.jsonl.xz
#     throughput bench_fuzz with $(nproc) jobs: campaign cases/s on c alone, on
#                $BENCH_FUZZ_BACKENDS (default c,opencl,vulkan,cuda) with persistent workers
#                and with a fresh worker per run
#     external   `assay check examples/*.tg` with the PyTorch client in its three modes
#                (clients/torch_client.py --mode eager|compile|sdpa, names torch-MODE) beside
#                the cuda backend, each with its report; one table of verdicts per example
#                and output, every failing row with its reason ($PYTHON: default python3;
#                $EXTERNAL_MODES: default "eager compile sdpa", one at a time to stay within
#                a command's time: Inductor compiles each example for tens of seconds)
#   (default: backends check). Logs and results go to $OUT (the device tool's folder) or /tmp.
# Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --pack ]; then
	B=${2:-build}
	make -j2 B="$B" all "$B/tests/test_cuda" "$B/tests/test_opencl" "$B/tests/test_vulkan" "$B/tests/test_wgsl" \
		>/dev/null || exit 1
	for b in bench_gpu bench_ulp bench_fuzz; do
		[ -f "bench/$b.c" ] && { make B="$B" "$B/bench/$b" >/dev/null || exit 1; }
	done
	rm -rf .devpack && mkdir -p .devpack/bin .devpack/lib
	cp "$B/assay" "$B"/tests/test_cuda "$B"/tests/test_opencl "$B"/tests/test_vulkan "$B"/tests/test_wgsl .devpack/bin/
	for b in bench_gpu bench_ulp bench_fuzz; do
		[ -x "$B/bench/$b" ] && cp "$B/bench/$b" .devpack/bin/
	done
	ldd .devpack/bin/* | awk '/=> \// {print $3}' | sort -u |
		grep -v -E '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so' |
		while read -r lib; do cp -L "$lib" .devpack/lib/; done
	cp -L /usr/lib/x86_64-linux-gnu/libvulkan.so.1 .devpack/lib/
	# the libshaderc the vulkan backend builds for itself (compiler/vulkan/vkrt.c)
	"$B/assay" backends >/dev/null 2>&1
	so=$(ls -t "${XDG_CACHE_HOME:-$HOME/.cache}"/assay/vk-shaderc-*.so 2>/dev/null | head -1)
	if [ -n "$so" ]; then cp "$so" .devpack/lib/libshaderc-assay.so
	else echo "device-run: no vk-shaderc-*.so in the cache: vulkan will be unavailable there"; fi
	if ! ls .gl/*.deb >/dev/null 2>&1; then
		mkdir -p .gl /tmp/amd64/partial
		o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
		# shellcheck disable=SC2086
		apt-get $o update >/dev/null &&
			(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
	fi
	if [ ! -f .wgpack.tar.xz ] && [ -d compiler/wgsl/node/node_modules/webgpu ] && command -v node >/dev/null; then
		t=$(mktemp -d) && mkdir -p "$t/wgpack/bin" &&
			cp -L "$(command -v node)" "$t/wgpack/bin/" &&
			cp -r compiler/wgsl/node/node_modules "$t/wgpack/" &&
			rm -rf "$t"/wgpack/node_modules/webgpu/dist/{win32-x64,win32-arm64,darwin-universal,linux-arm64} &&
			tar -cJf .wgpack.tar.xz -C "$t" wgpack
		rm -rf "$t"
	fi
	exclude=$(git rev-parse --git-path info/exclude)
	for p in /.devpack/ /.gl/ /.wgpack.tar.xz; do
		grep -qx "$p" "$exclude" 2>/dev/null || echo "$p" >>"$exclude"
	done
	echo "packed: $(du -sh .devpack .gl .wgpack.tar.xz 2>/dev/null | tr '\n' ' ')"
	echo "carry: .devpack .gl .wgpack.tar.xz; run: bash scripts/device-run.sh [backends check tests bench fuzz]"
	exit 0
fi

P=$PWD/.devpack
[ -x "$P/bin/assay" ] || { echo "device-run: .devpack/bin/assay is missing: run --pack here and carry .devpack"; exit 2; }
A=$P/bin/assay
LOG=${OUT:-/tmp}
export LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/assay-cache}
[ -f "$P/lib/libshaderc-assay.so" ] && export ASSAY_SHADERC=$P/lib/libshaderc-assay.so
# NVIDIA's OpenCL is installed without its ICD file
if [ -d /etc/OpenCL/vendors ] || mkdir -p /etc/OpenCL/vendors 2>/dev/null; then
	ls /etc/OpenCL/vendors/*nvidia* >/dev/null 2>&1 ||
		echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd 2>/dev/null
fi
# NVIDIA's Vulkan driver needs glvnd (the device README's recipe)
if ls .gl/*.deb >/dev/null 2>&1; then
	for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done
	ldconfig 2>/dev/null
fi
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
	export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
	export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
# Node.js and Dawn for the wgsl backend
if [ -f .wgpack.tar.xz ] && ! command -v node >/dev/null; then
	[ -x /tmp/wgpack/bin/node ] || tar -xJf .wgpack.tar.xz -C /tmp
	export ASSAY_NODE=/tmp/wgpack/bin/node
	[ -e compiler/wgsl/node/node_modules ] || ln -s /tmp/wgpack/node_modules compiler/wgsl/node/node_modules
fi
[ -d /usr/local/nvidia/lib64 ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/nvidia/lib64"

steps=${*:-backends check}
status=0
for step in $steps; do
	echo "== $step"
	case $step in
	backends)
		nvidia-smi -L 2>/dev/null || echo "(no nvidia-smi)"
		"$A" backends || status=1
		;;
	check)
		list=${BACKENDS:-c,opencl,vulkan,cuda,wgsl}
		"$A" check examples/*.tg tests/regress/*.tg --backends "$list" --schedules "${SCHEDULES:-2}" \
			--threads "$(nproc)" -o "$LOG/check" >"$LOG/check.log" 2>&1
		rc=$?
		grep -v -E ' pass ' "$LOG/check.log" | head -60
		echo "-- passing results / results, per example and backend (assay check exit $rc)"
		awk -v list="$list" '
			BEGIN { nb = split(list, bs, ","); for (i = 1; i <= nb; i++) isb[bs[i]] = 1 }
			NR > 1 && NF >= 5 && ($2 in isb) {
				k = $1; seen[k] = 1; tot[k, $2]++; if ($5 == "pass") ok[k, $2]++
				if ($5 == "unsupported") un[k, $2]++
			}
			END {
				printf "%-18s", "example"; for (i = 1; i <= nb; i++) printf " %-8s", bs[i]; printf "\n"
				for (k in seen) {
					printf "%-18s", k
					for (i = 1; i <= nb; i++) {
						b = bs[i]; s = (ok[k, b] + 0) "/" (tot[k, b] + 0)
						if (un[k, b]) s = s "u" un[k, b]
						printf " %-8s", s
					}
					printf "\n"
				}
			}' "$LOG/check.log" | { read -r h; echo "$h"; sort; }
		tail -1 "$LOG/check.log"
		[ $rc -eq 0 ] || status=1
		;;
	tests)
		for t in test_cuda test_opencl test_vulkan test_wgsl; do
			CK_DEFAULT_TIMEOUT=120 CK_FORK=yes timeout 400 "$P/bin/$t" >"$LOG/$t.log" 2>&1
			rc=$?
			echo "$t: exit $rc; $(grep -E '^[0-9]+%: Checks' "$LOG/$t.log")"
			grep -E ':[0-9]+:[EF]:' "$LOG/$t.log" | head -20
			[ $rc -eq 0 ] || status=1
		done
		;;
	bench)
		if [ -x "$P/bin/bench_gpu" ]; then
			"$P/bin/bench_gpu" --json "$LOG/bench_gpu.json" || status=1
			# the same derived kernels on the other GPU backends (a smaller matmul: its
			# candidates there take minutes at 4096^3)
			if [ -n "${BENCH_OTHERS:-}" ]; then
				"$P/bin/bench_gpu" --derived-on "$BENCH_OTHERS" --matmul "${BENCH_OTHERS_MATMUL:-1024}" \
					--json "$LOG/bench_gpu_others.json" || status=1
			fi
		else echo "bench_gpu was not packed"; fi
		if [ -x "$P/bin/bench_ulp" ]; then
			"$P/bin/bench_ulp" --backends "${ULP_BACKENDS:-cuda,opencl,vulkan}" || status=1
		else echo "bench_ulp was not packed"; fi
		;;
	throughput)
		if [ -x "$P/bin/bench_fuzz" ]; then
			rm -rf /tmp/throughput-camp
			BENCH_FUZZ_JOBS=$(nproc) BENCH_FUZZ_BACKENDS=${BENCH_FUZZ_BACKENDS:-c,opencl,vulkan,cuda} \
				BENCH_FUZZ_CASES=${BENCH_FUZZ_CASES:-96} BENCH_FUZZ_KEEP=/tmp/throughput-camp \
				"$P/bin/bench_fuzz" || status=1
			tar -C /tmp -cJf "$LOG/throughput-camp.tar.xz" throughput-camp 2>/dev/null
		else echo "bench_fuzz was not packed"; fi
		;;
	script)
		# $SCRIPT run in this environment (drivers, libraries, caches set up) with the
		# assay binary as its argument: a device experiment (tests/known/exp/run.sh)
		sh "${SCRIPT:?SCRIPT=FILE}" "$A" || status=1
		;;
	campaign)
		# the folder stays in /tmp (a machine kept warm keeps it); what comes back is small:
		# the failures, settings, summary and report, and the log compressed apart
		C=/tmp/campaign${CAMPAIGN_TAG:-}
		rm -rf "$C"
		# shellcheck disable=SC2086
		"$A" fuzz --cases "${CAMPAIGN_CASES:-600}" --jobs "$(nproc)" --seed "${SEED:-5}" \
			${CAMPAIGN_ARGS:-} -o "$C" >"$LOG/campaign${CAMPAIGN_TAG:-}.log" 2>&1
		rc=$?
		tail -15 "$LOG/campaign${CAMPAIGN_TAG:-}.log"
		"$A" report "$C" -o "$C/report" >/dev/null 2>&1 && head -60 "$C/report/report.md"
		(cd "$C" && tar -cJf "$LOG/campaign${CAMPAIGN_TAG:-}.tar.xz" settings.json summary.json \
			provenance.json report/report.md report/report.json $(ls -d failures errors 2>/dev/null))
		xz -9 -c "$C/results.jsonl" >"$LOG/results${CAMPAIGN_TAG:-}.jsonl.xz"
		[ $rc -eq 0 ] || status=1
		;;
	fuzz)
		"$A" fuzz --seconds "${FUZZ_SECONDS:-60}" --jobs "$(nproc)" --seed "${SEED:-1}" \
			-o "$LOG/fuzz" >"$LOG/fuzz.log" 2>&1
		rc=$?
		tail -15 "$LOG/fuzz.log"
		"$A" report "$LOG/fuzz" -o "$LOG/fuzz-report" >/dev/null 2>&1 &&
			head -40 "$LOG/fuzz-report/report.md"
		[ $rc -eq 0 ] || status=1
		;;
	gradcheck)
		# every example's gradient graph (assay grad) checked on $GRAD_BACKENDS (cuda)
		mkdir -p "$LOG/grad"
		for f in examples/*.tg; do
			n=$(basename "$f" .tg)
			"$A" grad "$f" -o "$LOG/grad/${n}_grad.tg" 2>"$LOG/grad/$n.err" ||
				{ echo "$n: no gradient ($(head -c 120 "$LOG/grad/$n.err"))"; continue; }
		done
		"$A" check "$LOG"/grad/*_grad.tg --backends "${GRAD_BACKENDS:-cuda}" --threads "$(nproc)" \
			>"$LOG/gradcheck.log" 2>&1 || status=1
		grep -v ' pass ' "$LOG/gradcheck.log" | tail -20
		;;
	probe)
		# the summation tree of each backend's derived row sum (assay probe, FPRev) under the
		# default, pairwise and split schedules, beside the tree each declares
		printf 'order s : pairwise\n' >"$LOG/pw.sched"
		printf 'split s : k=4\n' >"$LOG/split.sched"
		printf 'split s : k=4\norder s : pairwise\n' >"$LOG/both.sched"
		for b in ${BACKENDS:-c opencl vulkan cuda wgsl}; do
			for sc in default pw split both; do
				arg=""
				[ "$sc" = default ] || arg="--schedule $LOG/$sc.sched"
				# shellcheck disable=SC2086
				"$A" probe --backend "$b" --n "${PROBE_N:-32}" $arg --json || status=1
			done
		done | tee "$LOG/probe.jsonl"
		# cuBLAS through PyTorch: its GEMM's tree, the unit's fraction bits and rounding
		"${PYTHON:-python3}" clients/probe_torch.py | tee "$LOG/probe_torch.jsonl"
		;;
	decode)
		# the greedy decode of examples/qwen3_tiny on every available backend (the default
		# and $DECODE_SCHEDULES sampled schedules), its gate, and batch invariance of the
		# token-batched examples (T = 1 and 3 beside their own T) on every backend
		printf 'gate */token/*  token_agree         >= 99%%\ngate *  defect_divergences  <= 0\n' \
			>"$LOG/decode.policy"
		"$A" decode examples/qwen3_tiny --steps "${DECODE_STEPS:-32}" \
			--schedules "${DECODE_SCHEDULES:-1}" -o "$LOG/decode" >"$LOG/decode.log" 2>&1
		rc=$?
		grep -E '^==|unavailable' "$LOG/decode.log"
		"$A" gate "$LOG/decode" --policy "$LOG/decode.policy" | tail -4
		"$A" report "$LOG/decode" -o "$LOG/decode-report" >/dev/null 2>&1 &&
			grep -A12 '### Decode' "$LOG/decode-report/report.md"
		[ $rc -eq 0 ] || status=1
		"$A" check examples/swiglu_mlp.tg examples/rmsnorm.tg --invariance T=1,3 --schedules 2 \
			>"$LOG/invariance.log" 2>&1 || status=1
		grep -E 'variant-mismatch|batch invariance|^invariance|per directive' "$LOG/invariance.log"
		;;
	external)
		# the PyTorch client (clients/torch_client.py) in its three modes over every
		# example, with assay's cuda backend beside it, one check directory and report
		# each; a table of verdicts per example and backend; every failing row with its
		# reason (the repro: the example, --seed 1, the mode's command)
		own="--backends cuda"   # assay's cuda beside the first mode only
		for mode in ${EXTERNAL_MODES:-eager compile sdpa}; do
			# shellcheck disable=SC2086
			"$A" check examples/*.tg $own --external \
				"${PYTHON:-python3} clients/torch_client.py --mode $mode" --name "torch-$mode" \
				--compile-timeout 600 -o "$LOG/external-$mode" >"$LOG/external-$mode.log" 2>&1
			echo "torch-$mode: assay check exit $? ($(tail -1 "$LOG/external-$mode.log"))"
			"$A" report "$LOG/external-$mode" -o "$LOG/external-$mode/report" >/dev/null 2>&1
			own=""
		done
		echo "-- verdict per example: cuda, torch-eager, torch-compile, torch-sdpa"
		cat "$LOG"/external-*.log | awk '
			NF >= 5 && $3 ~ /^(default|graph|claim)$/ { k = $1 "/" $4; seen[k] = 1; v[k, $2] = $5 }
			END {
				n = split("cuda torch-eager torch-compile torch-sdpa", bs, " ")
				printf "%-26s", "example/output"; for (i = 1; i <= n; i++) printf " %-15s", bs[i]; printf "\n"
				for (k in seen) {
					printf "%-26s", k
					for (i = 1; i <= n; i++) printf " %-15s", ((k, bs[i]) in v) ? v[k, bs[i]] : "-"
					printf "\n"
				}
			}' | { read -r h; echo "$h"; sort; }
		grep -h -A1 -E ' (over-budget|special-mismatch|crash|timeout|bad-output) ' "$LOG"/external-*.log | head -60
		;;
	*)
		echo "device-run: unknown step $step"; status=2
		;;
	esac
done
exit $status

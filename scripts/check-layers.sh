#!/bin/sh
# Fails when a folder includes a header it may not use (docs/architecture.md, "Folders"):
# each folder may include only its own headers and the public headers of the folders below
# it in the table; a private header is never included from another folder.
allowed() {
	case "$1" in
	compiler) echo "compiler" ;;
	interp) echo "compiler interp" ;;
	oracles) echo "compiler interp oracles" ;;
	verify) echo "compiler interp oracles verify" ;;
	fuzz) echo "compiler interp oracles verify fuzz" ;;
	reports) echo "verify reports" ;;
	cli|tests|bench) echo "*" ;;
	esac
}
status=0
for dir in compiler interp oracles verify fuzz reports cli tests bench; do
	[ -d "$dir" ] || continue
	ok=$(allowed "$dir")
	for f in $(find "$dir" -name '*.c' -o -name '*.h'); do
		grep -n '#include "' "$f" | while IFS= read -r line; do
			inc=$(echo "$line" | sed 's/.*#include "\([^"]*\)".*/\1/')
			# resolve relative to the file's folder
			fdir=$(dirname "$f")
			path=$(realpath -m --relative-to=. "$fdir/$inc")
			top=${path%%/*}
			base=$(basename "$path")
			if [ "$top" = "$(echo "$f" | cut -d/ -f1)" ]; then continue; fi
			if [ "$ok" != "*" ]; then
				case " $ok " in *" $top "*) ;; *)
					echo "$f:${line%%:*}: includes $path: $dir/ may not use $top/"; echo x >>.layers.fail ;;
				esac
			fi
			# only a folder's public header may be included from outside it, and
			# compiler/ops.def, the op table, whose mpfr column interp/mpop.c expands
			case "$top/$base" in "$top/$top.h"|compiler/ops.def) ;; *)
				echo "$f:${line%%:*}: includes private header $path of $top/"; echo x >>.layers.fail ;;
			esac
		done
	done
done
# Inside compiler/, the stages (docs/architecture.md, "Folders"; compiler/README order):
# format, sched (schedules and rewrites), kir (kernel IR and lowering), map (the mapping
# stage), emit (the emitter core and the run driver's helpers), then the backends. A file
# of a stage may include compiler/'s top-level headers (compiler.h, ops.def, cov.def,
# arena.h), its own folder's and those of the stages before it; a backend never another
# backend's. compiler/'s top-level files (the IR, the public API's glue: backend.c's
# registry) may include any stage. Known exceptions, each a use to move down:
#   compiler/kir/kir.c -> map (kir_plan_text prints the mapping stage's plan)
#   compiler/kir/lower.c -> map (the Kernels it makes hold the map cache, map_cache_new)
stage_rank() {
	case "$1" in
	format) echo 1 ;; sched) echo 2 ;; kir) echo 3 ;; map) echo 4 ;; emit) echo 5 ;;
	c|cuda|opencl|vulkan|wgsl) echo 6 ;; *) echo 0 ;;
	esac
}
for f in $(find compiler -path compiler/wgsl/node -prune -o \( -name '*.c' -o -name '*.h' \) -print); do
	sub=$(echo "$f" | cut -d/ -f2)
	[ -d "compiler/$sub" ] || continue   # a top-level file of compiler/
	r=$(stage_rank "$sub")
	grep -n '#include "' "$f" | while IFS= read -r line; do
		inc=$(echo "$line" | sed 's/.*#include "\([^"]*\)".*/\1/')
		path=$(realpath -m --relative-to=. "$(dirname "$f")/$inc")
		case "$path" in compiler/*/*) ;; *) continue ;; esac
		tsub=$(echo "$path" | cut -d/ -f2)
		[ "$tsub" = "$sub" ] && continue
		tr=$(stage_rank "$tsub")
		case "$f:$tsub" in compiler/kir/kir.c:map|compiler/kir/lower.c:map) continue ;; esac
		if [ "$tr" -ge "$r" ]; then
			echo "$f:${line%%:*}: includes $path: compiler/$sub/ may not use compiler/$tsub/ (a later stage or another backend)"
			echo x >>.layers.fail
		fi
	done
done
if [ -f .layers.fail ]; then rm -f .layers.fail; exit 1; fi
exit 0

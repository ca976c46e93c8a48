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
if [ -f .layers.fail ]; then rm -f .layers.fail; exit 1; fi
exit 0

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# man/check-pages.sh MAP MANDIR
#
# The man pages' test (ctest -L doc):
#  1. every symbol exported by the version script MAP has a page
#     MANDIR/man3/<symbol>.3, a file or a one-line `.so man3/<page>.3` link
#     to a page that exists and names the symbol in its NAME section;
#  2. man(1) renders every page of MANDIR without a warning
#     (MANWIDTH=80 man --warnings=w -l PAGE); a link is checked through the
#     page it points to.
# Exit 0 when both hold, 1 otherwise, 77 (skipped) when man is not installed
# (after step 1, which needs nothing but the shell).
set -euo pipefail

if [ $# -ne 2 ] || [ ! -f "$1" ] || [ ! -d "$2" ]; then
	echo "usage: $0 MAP MANDIR" >&2
	exit 2
fi
map=$1
mandir=$(cd "$2" && pwd)
fail=0

# The names between "global:" and "local:", one "name;" per line.
mapfile -t symbols < <(sed -n '/global:/,/local:/{/^[[:space:]]*umcg__/d;s/^[[:space:]]*\([a-z_][a-z0-9_]*\);.*/\1/p}' "$map")
if [ "${#symbols[@]}" -eq 0 ]; then
	echo "no symbols found in $map" >&2
	exit 1
fi

# link_target PAGE: the page a `.so` link points to, or nothing for a page.
link_target() {
	local first
	first=$(head -n 1 "$1")
	case "$first" in
	".so "*) printf '%s\n' "${first#.so }" ;;
	esac
}

for sym in "${symbols[@]}"; do
	page=$mandir/man3/$sym.3
	if [ ! -f "$page" ]; then
		echo "FAIL $sym: no page man3/$sym.3" >&2
		fail=1
		continue
	fi
	target=$(link_target "$page")
	if [ -n "$target" ]; then
		if [ "$(wc -l <"$page")" -ne 1 ]; then
			echo "FAIL man3/$sym.3: a .so link must be one line" >&2
			fail=1
		fi
		if [ ! -f "$mandir/$target" ] || [ -n "$(link_target "$mandir/$target")" ]; then
			echo "FAIL man3/$sym.3: links to $target, which is not a page" >&2
			fail=1
			continue
		fi
		page=$mandir/$target
	fi
	# The NAME section runs from ".SH NAME" to the next ".SH".
	if ! sed -n '/^\.SH NAME/,/^\.SH [^N]/p' "$page" | grep -qw -- "$sym"; then
		echo "FAIL $sym: the NAME section of ${page#"$mandir"/} does not name it" >&2
		fail=1
	fi
done
echo "${#symbols[@]} symbols of $(basename "$map") checked for pages"

if ! command -v man >/dev/null 2>&1; then
	echo "SKIP: man is not installed (Debian: man-db), pages not rendered"
	[ "$fail" -eq 0 ] && exit 77
	exit 1
fi

# Render from MANDIR, where the `.so man3/...` requests resolve.
cd "$mandir"
export MANWIDTH=80 MANPAGER=cat PAGER=cat LC_ALL=C.UTF-8
rendered=0
for page in man[1-8]/*.[1-8]; do
	[ -n "$(link_target "$page")" ] && continue
	if ! err=$(man --warnings=w -l "$page" 2>&1 >/dev/null) || [ -n "$err" ]; then
		echo "FAIL $page: man reports:" >&2
		printf '%s\n' "$err" >&2
		fail=1
	fi
	rendered=$((rendered + 1))
done
echo "$rendered pages rendered"
exit "$fail"

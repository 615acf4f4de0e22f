#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/install/run.sh BUILD_DIR
#
# Installs the libumcg build tree BUILD_DIR into a temporary prefix, then
# builds and runs the consumer of this directory against that prefix twice:
# as a CMake project with find_package(umcg) (shared and static), and by
# hand with `cc $(pkg-config --cflags --libs libumcg)`, and with
# libumcg-preload.so linked (umcg::preload, pkg-config libumcg-preload) and
# preloaded. Each run must find the installed copy, not some other one on
# the system.
# It also checks that the man pages are installed, one per exported symbol.
#
# Environment: CC (default cc); UMCG_CONSUMER_FLAGS, compiler and linker
# flags the build tree was made with (its sanitizers), also given to the
# consumer so that it can load a sanitized libumcg.so.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
	echo "usage: $0 BUILD_DIR (a configured and built libumcg build tree)" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cc=${CC:-cc}
read -r -a flags <<<"${UMCG_CONSUMER_FLAGS:-}"
strict=(-std=c11 -Wall -Wextra -Wpedantic -Werror)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/umcg-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

step() {
	printf '== %s\n' "$*"
}

step "install $build into $prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
	{ cat "$tmp/install.log"; exit 1; }

step "man pages: one per exported symbol, under CMAKE_INSTALL_MANDIR"
mandir=$(sed -n 's/^CMAKE_INSTALL_MANDIR:PATH=//p' "$build/CMakeCache.txt")
case "${mandir:=share/man}" in
/*) ;;
*) mandir=$prefix/$mandir ;;
esac
map=$here/../../src/libumcg.map
mapfile -t symbols < <(sed -n '/global:/,/local:/{/^[[:space:]]*umcg__/d;s/^[[:space:]]*\([a-z_][a-z0-9_]*\);.*/\1/p}' "$map")
missing=()
for page in "${symbols[@]/#/man3/}" man1/umcg-demo.1 man7/libumcg.7 man7/umcg_io.7 \
	man7/libumcg-preload.7; do
	case "$page" in
	man3/*) page=$page.3 ;;
	esac
	[ -f "$mandir/$page" ] || missing+=("$page")
done
if [ "${#symbols[@]}" -eq 0 ] || [ "${#missing[@]}" -ne 0 ]; then
	echo "not installed under $mandir: ${missing[*]:-the symbols of $map}" >&2
	exit 1
fi
# A .so link must resolve inside the installed tree.
if command -v man >/dev/null 2>&1; then
	found=$(MANPATH=$mandir man -w umcg_pwrite)
	case "$found" in
	"$mandir"/*) ;;
	*)
		echo "man -w umcg_pwrite found '$found', not the page under $mandir" >&2
		exit 1
		;;
	esac
	MANPATH=$mandir MANWIDTH=80 man umcg_pwrite 2>&1 | grep -q 'umcg_pwrite' ||
		{ echo "man umcg_pwrite does not render the shared page" >&2; exit 1; }
fi
echo "${#symbols[@]} symbol pages and the section 1 and 7 pages are installed"

step "find_package(umcg): configure and build"
cmake -S "$here" -B "$tmp/cmake" \
	-DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_C_COMPILER="$cc" \
	-DCMAKE_C_FLAGS="${flags[*]}" \
	-DCMAKE_EXE_LINKER_FLAGS="${flags[*]}" \
	-DCMAKE_BUILD_TYPE=Debug
umcg_dir=$(sed -n 's/^umcg_DIR:PATH=//p' "$tmp/cmake/CMakeCache.txt")
case "$umcg_dir" in
"$prefix"/*) ;;
*)
	echo "find_package(umcg) found $umcg_dir, not the copy in $prefix" >&2
	exit 1
	;;
esac
cmake --build "$tmp/cmake"

step "find_package(umcg): run umcg::umcg"
"$tmp/cmake/umcg-consumer" | tee "$tmp/shared.out"
step "find_package(umcg): run umcg::umcg_static"
"$tmp/cmake/umcg-consumer-static"

step "find_package(umcg): run umcg::preload"
readelf -d "$tmp/cmake/umcg-consumer-preload" | grep -q 'NEEDED.*libumcg-preload' ||
	{ echo "umcg-consumer-preload does not load libumcg-preload.so" >&2; exit 1; }
"$tmp/cmake/umcg-consumer-preload"

step "pkg-config: build and run"
pc=$(find "$prefix" -name libumcg.pc)
if [ "$(printf '%s\n' "$pc" | wc -l)" -ne 1 ] || [ -z "$pc" ]; then
	echo "expected one libumcg.pc under $prefix, found: ${pc:-none}" >&2
	exit 1
fi
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir libumcg)
case "$libdir" in
"$prefix"/*) ;;
*)
	echo "libumcg.pc gives libdir=$libdir, outside $prefix" >&2
	exit 1
	;;
esac
read -r -a pc_flags <<<"$(pkg-config --cflags --libs libumcg)"
"$cc" "${strict[@]}" "${flags[@]}" -o "$tmp/consumer-pc" "$here/consumer.c" "${pc_flags[@]}"
LD_LIBRARY_PATH=$libdir "$tmp/consumer-pc" | tee "$tmp/pc.out"

step "pkg-config: libumcg-preload, linked and with LD_PRELOAD"
read -r -a pc_flags <<<"$(pkg-config --cflags --libs libumcg-preload)"
"$cc" "${strict[@]}" "${flags[@]}" -o "$tmp/consumer-pc-preload" "$here/consumer.c" \
	-Wl,--no-as-needed "${pc_flags[@]}"
LD_LIBRARY_PATH=$libdir "$tmp/consumer-pc-preload"
[ -f "$libdir/libumcg-preload.so" ] || { echo "no libumcg-preload.so in $libdir" >&2; exit 1; }
# With a sanitizer's runtime, LD_PRELOAD would load before it: only plain builds.
if [ ${#flags[@]} -eq 0 ]; then
	LD_LIBRARY_PATH=$libdir LD_PRELOAD=$libdir/libumcg-preload.so "$tmp/consumer-pc"
fi

step "versions agree"
pc_version=$(pkg-config --modversion libumcg)
for out in "$tmp/shared.out" "$tmp/pc.out"; do
	read -r _ version _ <"$out"
	if [ "$version" != "$pc_version" ]; then
		echo "libumcg.pc says $pc_version, the library says $version" >&2
		exit 1
	fi
done
echo "install test passed: libumcg $pc_version"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# configure refuses missing required dependencies with a message that names the package to install,
# and treats Slurm as optional.
. "${srcdir:-.}/tap.sh"

top_srcdir=$(cd "${srcdir:-.}/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pcdir=$(pkg-config --variable pc_path pkg-config 2>/dev/null)
[ -n "$pcdir" ] || plan_skip_all "pkg-config has no search path"
plan 6

# A pkg-config search path holding every .pc file but the one under test.
hide_pc () {
    local hide=$1 d
    rm -rf "$tmp/pc" && mkdir -p "$tmp/pc"
    IFS=: read -ra dirs <<<"$pcdir"
    for d in "${dirs[@]}"; do
        [ -d "$d" ] || continue
        for f in "$d"/*.pc; do
            [ -e "$f" ] || continue
            [ "$(basename "$f")" = "$hide.pc" ] && continue
            ln -sf "$f" "$tmp/pc/"
        done
    done
}

run_configure () {
    (cd "$tmp/b" && "$top_srcdir/configure" -q "$@") >"$tmp/out" 2>&1
}
mkdir -p "$tmp/b"

for dep in jansson:libjansson-dev libmicrohttpd:libmicrohttpd-dev sqlite3:libsqlite3-dev; do
    pc=${dep%%:*} pkg=${dep#*:}
    hide_pc "$pc"
    PKG_CONFIG_LIBDIR=$tmp/pc run_configure --without-slurm
    status=$?
    [ $status -ne 0 ] && grep -q "install $pkg" "$tmp/out"
    ok $? "configure fails without $pc and names $pkg" || cat "$tmp/out" | sed 's/^/# /'
done

run_configure --with-slurm=/nonexistent
status=$?
[ $status -ne 0 ] && grep -q "slurm/spank.h was not found" "$tmp/out"
ok $? "--with-slurm=PATH without spank.h fails clearly" || sed 's/^/# /' "$tmp/out"

run_configure --without-slurm
ok $? "--without-slurm configures" || sed 's/^/# /' "$tmp/out"
grep -Eq '^ *slurm: +no' "$tmp/out"
ok $? "the summary reports slurm: no" || sed 's/^/# /' "$tmp/out"

done_testing

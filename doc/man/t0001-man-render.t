#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Every man page renders with man(1) and groff without a single warning, and
# has the sections an admin looks for.
. "${FM_TOP_SRCDIR:?}/tests/tap.sh"

pages="fabricd.8 fabricd.conf.5 fabricctl.1 fabric-check.1 fabric-agent.8 fabric_monitor.8"
dir="$FM_TOP_SRCDIR/doc/man"

command -v man >/dev/null && command -v groff >/dev/null \
    || plan_skip_all "man or groff not installed (man-db, groff-base)"
plan 18

for p in $pages; do
    out=$(MANWIDTH=80 man --warnings -l "$dir/$p" 2>&1 >/dev/null)
    is "$out" "" "$p: man --warnings is silent"
    out=$(groff -man -ww -z "$dir/$p" 2>&1)
    is "$out" "" "$p: groff -ww is silent"
    text=$(MANWIDTH=80 man -l "$dir/$p" 2>/dev/null)
    missing=
    for s in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
        printf '%s\n' "$text" | grep -qx "$s" || missing="$missing $s"
    done
    is "$missing" "" "$p: has NAME, SYNOPSIS, DESCRIPTION, SEE ALSO"
done

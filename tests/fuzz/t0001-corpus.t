#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Replay every fuzz target's seed corpus and crash reproducers (corpus/<t>/,
# regress/<t>/) through the target: a crash, a sanitizer report or a broken
# invariant fails the target's test. Builds without libFuzzer run the
# standalone driver; libFuzzer builds run the same files through libFuzzer's
# replay mode.

. "$FM_TOP_SRCDIR/tests/tap.sh"

: "${FUZZ_SRCDIR:?}" "${FUZZ_BUILDDIR:?}" "${FUZZ_TARGETS:?}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fm-fuzz-t0001.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

set -- $FUZZ_TARGETS
plan $(($# * 2))

for t in $FUZZ_TARGETS; do
    prog=$FUZZ_BUILDDIR/fuzz_$t
    list=$tmp/$t.files
    find "$FUZZ_SRCDIR/corpus/$t" "$FUZZ_SRCDIR/regress/$t" -type f ! -name '.*' \
        2>/dev/null | sort > "$list"
    n=$(wc -l < "$list")
    # An empty corpus would make the replay pass without testing anything.
    test "$n" -gt 0
    ok $? "$t: corpus has inputs ($n)"
    # -runs is libFuzzer's; the driver has no options, so only pass it there.
    if "$prog" -help=1 2>&1 | grep -q 'libFuzzer'; then
        set -- -runs=1
    else
        set --
    fi
    xargs "$prog" "$@" < "$list" > "$tmp/$t.log" 2>&1
    rc=$?
    ok $rc "$t: replays $n inputs cleanly"
    if [ $rc -ne 0 ]; then
        tail -40 "$tmp/$t.log" | sed 's/^/# /'
    fi
done

done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# fabric-check under `srun --mpi=pmix` on the minicluster: a quick check of 4
# healthy nodes passes in under 10 s; with fmn3's link at 1 Mbit/s the quick
# check names fmn3, and only fmn3, as slow, still in under 10 s; --full on 6
# nodes tests all 15 pairs; the result reaches fabricd as evidence.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
prog=$FM_BUILDDIR/agent/fabric-check
[ -x "$prog" ] || plan_skip_all "fabric-check not built (configure found no PMIx)"
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 17

mc_up --nodes 6
ok $? "minicluster up with 6 nodes"
supp=$FM_SRCDIR/tests/system/pmix-lsan.supp
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$supp"
out=$MC_TMP/check.out
err=$MC_TMP/check.err

# run_check OUT ERR SRUN-ARGS -- CHECK-ARGS: sets rc and secs
run_check () {
    local o=$1 e=$2 t0 sargs=()
    shift 2
    while [ "$1" != -- ]; do sargs+=("$1"); shift; done
    shift
    t0=$(mc_now)
    (cd "$MC_HOME" && mc_exec ctl timeout 60 srun --mpi=pmix "${sargs[@]}" --ntasks-per-node=1 \
        "$prog" --daemon "$FM_DAEMON_URL" --munge-socket "$FM_MUNGE_SOCKET" "$@") >"$o" 2>"$e"
    rc=$?
    secs=$(mc_elapsed "$t0" "$(mc_now)")
    diag "srun ${sargs[*]} fabric-check $*: exit $rc in $secs s"
    while IFS= read -r l; do diag "$l"; done <"$o"
    [ ! -s "$e" ] || while IFS= read -r l; do diag "stderr: $l"; done <"$e"
}

run_check "$out" "$err" -N4 -- --quick
ok $rc "quick check of 4 healthy nodes passes (exit 0)"
mc_within "$secs" 0 10
ok $? "and takes under 10 s ($secs s)"
grep -q '^fabric-check: quick, 4 nodes, 4 pairs' "$out" && tail -n 1 "$out" | grep -qx 'fabric-check: PASS'
ok $? "the table covers the 4 ring pairs and ends with PASS"

mc fault add fmn3 rate 1000
ok $? "fmn3's link limited to 1 Mbit/s"
run_check "$out" "$err" -N4 -- --quick
is "$rc" 1 "quick check exits 1 with a slow node"
mc_within "$secs" 0 10
ok $? "and still takes under 10 s ($secs s)"
grep -qx 'slow nodes: fmn3 (2/2 pairs)' "$out"
ok $? "fmn3 is named as the slow node, from both of its pairs"
is "$(tail -n 1 "$out")" "fabric-check: FAIL bad nodes: fmn3" "and as the only bad node"
# worst first: the first two rows are fmn3's pairs
is "$(sed -n '3,4p' "$out" | grep -c 'fmn3 .*SLOW')" 2 "the two slow pairs head the table"
mc fault clear

run_check "$out" "$err" -N6 -- --full --json
ok $rc "full check of 6 healthy nodes passes"
is "$(jq '.pairs | length' "$out")" 15 "it reports 15 pairs"
is "$(jq -r '.pairs[] | [.a, .b] | sort | join("-")' "$out" | sort -u | wc -l | tr -d ' ')" 15 \
    "all 15 distinct pairs of the 6 nodes"
is "$(jq '[.pairs[] | select(.ok and .bw_bps > 0 and .lat_p50_ns > 0)] | length' "$out")" 15 \
    "each with a latency and a bandwidth"
job=$(jq .job_id "$out")

checks=$(fm_get "/v1/checks?job=$job")
is "$(echo "$checks" | jq '.checks[0].pairs | length')" 15 \
    "fabricd holds the posted result of job $job"
is "$(echo "$checks" | jq -r '.checks[0].mode')" full "as a full check"

(cd "$MC_HOME" && mc_exec ctl timeout 30 srun --mpi=none -N2 --ntasks-per-node=1 "$prog" --no-post) \
    >/dev/null 2>"$err"
is "$?" 3 "without --mpi=pmix it fails with status 3 (no PMIx server)"
done_testing

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# A 4-node `srun --mpi=pmix` step exchanges data through PMIx: each rank puts a
# value naming its rank and host, fences, and reads the next rank's value.
. "${srcdir:-.}/../tap.sh"
. "${srcdir:-.}/lib.sh"
mc_require
prog=$FM_BUILDDIR/tests/system/pmix-exchange
[ -x "$prog" ] || plan_skip_all "pmix-exchange not built (configure found no PMIx)"
plan 7

mc_up --nodes 4
ok $? "up --nodes 4"

# Under an ASan build, ignore what libpmix itself never frees; srun passes the
# environment on to the tasks.
supp=$(cd "${srcdir:-.}" && pwd)/pmix-lsan.supp
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$supp"
out=$MC_TMP/pmix.out
(cd "$MC_HOME" && mc_exec ctl timeout 60 srun --mpi=pmix -N4 -n4 "$prog") >"$out" 2>"$MC_TMP/pmix.err"
rc=$?
ok $rc "srun --mpi=pmix -N4 -n4 pmix-exchange exits 0"
[ $rc -eq 0 ] || diag "$(cat "$MC_TMP/pmix.err")"
is "$(wc -l <"$out" | tr -d ' ')" 4 "four ranks reported"
is "$(sed -n 's/^rank [0-9]*\/4 on \(fmn[0-9]*\) .*/\1/p' "$out" | sort -u | wc -l | tr -d ' ')" 4 \
    "the four ranks ran on four different nodes"

# Every rank must hold the value its successor published, host included: the
# host a rank reports for itself must be the host its predecessor received.
bad=0
for r in 0 1 2 3; do
    host=$(sed -n "s/^rank $r\/4 on \(fmn[0-9]*\) .*/\1/p" "$out")
    p=$(( (r + 3) % 4 ))
    got=$(sed -n "s/^rank $p\/4 on [^ ]* got \"\([^\"]*\)\" from rank $r\$/\1/p" "$out")
    [ "$got" = "rank-$r@$host:$((r * 7919))" ] || { bad=1; diag "rank $p got '$got' for rank $r on $host"; }
done
ok $bad "each rank read its successor's value, from the successor's node"
grep -q '^rank 0/4 on fmn1 ' "$out" && grep -q '^rank 3/4 on fmn4 ' "$out"
ok $? "block distribution: rank 0 on fmn1, rank 3 on fmn4"

(cd "$MC_HOME" && mc_exec ctl timeout 60 srun --mpi=none -N2 -n2 "$prog") >/dev/null 2>&1
ok $((! $?)) "without --mpi=pmix the same program fails (it needs the PMIx server)"
done_testing

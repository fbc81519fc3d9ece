#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The simulation suite: every scenario under tests/sim through bench/fabric-sim
# (the real scoring, localization and policy code), with the acceptance bars:
#   single-*.json  one fault each: precision >= 0.99, recall >= 0.99
#   triple-*.json  three simultaneous faults: precision and recall >= 0.95
#   noise-*.json   noise only for an hour: no detection, no drain
#   all faults:    median detection <= 10 s of simulated time
# scale-16k.json (16,384 nodes, one hour, <= 60 s of CPU) runs with FM_LONG_TESTS=1.
# Environment: FABRIC_SIM (the binary), else $FM_TOP_BUILDDIR/bench/fabric-sim;
# FM_TOP_SRCDIR (else this script's ../..).

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${FM_TOP_SRCDIR:-$here/../..}
. "$top_srcdir/tests/tap.sh"

sim=${FABRIC_SIM:-${FM_TOP_BUILDDIR:-$top_srcdir}/bench/fabric-sim}
[ -x "$sim" ] || plan_skip_all "no fabric-sim binary at $sim"
command -v jq >/dev/null || plan_skip_all "jq is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t3001.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# run FILE: stdout to $tmp/NAME.out, stderr to $tmp/NAME.err
run () {
    local name
    name=$(basename "$1" .json)
    "$sim" --quiet --scenario "$1" >"$tmp/$name.out" 2>"$tmp/$name.err"
}

# group PREFIX: run each scenario; sets g_faults g_correct g_dets g_cdets
# g_drains_false g_fail, and appends detection delays to $tmp/delays
group () {
    g_faults=0 g_correct=0 g_dets=0 g_cdets=0 g_drains_false=0 g_fail=0
    for f in "$here"/"$1"-*.json; do
        local name out err
        name=$(basename "$f" .json)
        if ! run "$f"; then
            g_fail=$((g_fail + 1))
            diag "$name: fabric-sim failed: $(tail -1 "$tmp/$name.err")"
            continue
        fi
        out=$tmp/$name.out
        err=$tmp/$name.err
        g_faults=$((g_faults + $(jq -s 'map(select(has("fault"))) | length' \
            < <(grep '^{' "$out"))))
        g_correct=$((g_correct + $(jq -s 'map(select(.correct == true)) | length' \
            < <(grep '^{' "$out"))))
        jq -r 'select(.correct == true) | .detect_s' < <(grep '^{' "$out") \
            >>"$tmp/delays"
        g_dets=$((g_dets + $(sed -n 's/.*detections=\([0-9]*\).*/\1/p' "$err")))
        g_cdets=$((g_cdets + $(sed -n 's/.* correct=\([0-9]*\).*/\1/p' "$err")))
        g_drains_false=$((g_drains_false \
            + $(sed -n 's/.*false_drains=\([0-9]*\)$/\1/p' "$out")))
        grep -q '"correct":false' "$out" && diag "$name: $(grep '"correct":false' "$out")"
        grep -q false_positive "$out" && diag "$name: $(grep false_positive "$out" | head -3)"
    done
}

# at_least A B MIN: A/B >= MIN (B == 0 counts as 1)
at_least () {
    awk -v a="$1" -v b="$2" -v m="$3" 'BEGIN { exit !((b == 0 ? 1 : a / b) >= m) }'
}

ratio () {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b == 0 ? 1 : a / b }'
}

: >"$tmp/delays"

group single
ok $((g_fail)) "single-fault scenarios ran"
at_least "$g_correct" "$g_faults" 0.99
ok $? "single faults: recall $(ratio "$g_correct" "$g_faults") ($g_correct/$g_faults) >= 0.99"
at_least "$g_cdets" "$g_dets" 0.99
ok $? "single faults: precision $(ratio "$g_cdets" "$g_dets") ($g_cdets/$g_dets) >= 0.99"
is "$g_drains_false" 0 "single faults: no false drains"

group triple
ok $((g_fail)) "three-fault scenarios ran"
at_least "$g_correct" "$g_faults" 0.95
ok $? "three faults: recall $(ratio "$g_correct" "$g_faults") ($g_correct/$g_faults) >= 0.95"
at_least "$g_cdets" "$g_dets" 0.95
ok $? "three faults: precision $(ratio "$g_cdets" "$g_dets") ($g_cdets/$g_dets) >= 0.95"

group noise
ok $((g_fail)) "noise-only scenarios ran"
is "$g_dets" 0 "noise only: no detection"
is "$g_drains_false" 0 "noise only: 0 false drains"

median=$(median <"$tmp/delays")
median=${median:-none}
awk -v m="$median" 'BEGIN { exit !(m != "none" && m <= 10) }'
ok $? "median detection ${median} s <= 10 s ($(wc -l <"$tmp/delays") faults)"

# error paths: a bad scenario is refused with the field named
printf '{"seed":1,"topology":{"kind":"flat","nodes":8},"duration_s":60,"bogus":1}' \
    >"$tmp/bad1.json"
"$sim" --scenario "$tmp/bad1.json" >/dev/null 2>"$tmp/bad1.err"
rc=$?
[ $rc -eq 1 ] && grep -q "unknown key 'bogus'" "$tmp/bad1.err"
ok $? "unknown key refused (rc $rc: $(cat "$tmp/bad1.err"))"
printf '{"seed":1,"topology":{"kind":"flat","nodes":8},"duration_s":60,
  "faults":[{"at_s":10,"kind":"loss","target":"uplink:leaf0-spine0","value":0.1}]}' \
    >"$tmp/bad2.json"
"$sim" --scenario "$tmp/bad2.json" >/dev/null 2>"$tmp/bad2.err"
rc=$?
[ $rc -eq 1 ] && grep -q "flat topology has only node targets" "$tmp/bad2.err"
ok $? "uplink target in a flat topology refused (rc $rc)"
printf '{"seed":1,"topology":{"kind":"leafspine","leaves":2,"nodes_per_leaf":2,
  "spines":1},"duration_s":60,"faults":[{"at_s":10,"kind":"down","target":"node:n99"}]}' \
    >"$tmp/bad3.json"
"$sim" --scenario "$tmp/bad3.json" >/dev/null 2>"$tmp/bad3.err"
rc=$?
[ $rc -eq 1 ] && grep -q "not in the topology" "$tmp/bad3.err"
ok $? "unknown fault target refused (rc $rc)"
"$sim" --scenario "$tmp/missing.json" >/dev/null 2>&1
ok $(($? != 1)) "missing scenario file is an error"

if [ -n "$FM_LONG_TESTS" ]; then
    # CPU seconds of the one (single-threaded) process: on a shared machine the
    # wall clock measures the neighbours too
    TIMEFORMAT='%U %S %R'
    { time run "$here/scale-16k.json"; } 2>"$tmp/scale.time"
    rc=$?
    read -r user sys wall <"$tmp/scale.time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    ok $rc "scale-16k ran: $(tail -1 "$tmp/scale-16k.err")"
    awk -v c="$cpu" 'BEGIN { exit !(c <= 60) }'
    ok $? "16,384 nodes, one simulated hour: ${cpu} s of CPU <= 60 s (${wall} s wall)"
    grep -q 'precision=1.0000 recall=1.0000' "$tmp/scale-16k.out"
    ok $? "scale-16k: $(tail -1 "$tmp/scale-16k.out")"
else
    skip "scale-16k (set FM_LONG_TESTS=1)"
fi

done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Acceptance: measured figures match injected faults, in one cluster boot.
# 1. 2 ms of delay on the traffic arriving at fmn3, from once the job's
#    clocks are established: the one-way delay INTO fmn3 is at least 2 ms
#    - 20% and within 20% of the link's round trip, and out of it normal, in
#    the job's summary and in `fabricctl links` alike.  netem never delays
#    less than asked, but on a loaded host it delays more (CI on 2 cores
#    under ASan: 2.42 ms median round trip), so the round trip is what the
#    one-way delay is held to.
#    A delay on every packet into one node is a node-level asymmetry, which
#    no probe-only fit can tell from a clock offset; the clock's holdover
#    (doc/clock.md, "Holdover") holds the sudden change off the clock model,
#    so the delay shows in the direction it is in.  A delay there from the
#    start would still be split (and is not what this tests).  The two
#    one-way delays of each fmn3 link add up to its round trip +- 20%, and
#    the links not touching fmn3 show none.
# 2. 5% loss on fmn2's cable (both directions): every directed link touching
#    fmn2 shows 5% -2.5/+2 points from both its reporters, over >= 1000 probes
#    each, 5% +- 1 point over all of them, and the links not touching fmn2
#    show none.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 18

# "SRC DST REPORTER OWD_US RTT_US" lines -> "A REPORTER SUM_US RTT_US" per
# pair {A, fmn3} measured by one reporter: into fmn3 plus out of it
pair_sums () {
    awk '$2 == "fmn3" && $4 != "" { into[$1 " " $3] = $4; rtt[$1 " " $3] = $5 }
         $1 == "fmn3" && $4 != "" { out[$2 " " $3] = $4 }
         END { for (k in into) if (k in out) print k, into[k] + out[k], rtt[k] }'
}

# "2.01ms", "12.3us", "-" (a summary or fabricctl cell) -> microseconds, or ""
to_us () {
    case $1 in
        *ms) awk -v v="${1%ms}" 'BEGIN { printf "%.1f", v * 1000 }' ;;
        *us) echo "${1%us}" ;;
        *ns) awk -v v="${1%ns}" 'BEGIN { printf "%.3f", v / 1000 }' ;;
        *s) awk -v v="${1%s}" 'BEGIN { printf "%.1f", v * 1e6 }' ;;
        *) echo "" ;;
    esac
}

# Lines "SRC DST REPORTER OWD_P50_US RTT_P50_US" from a job output's summary
summary_owd () {
    sed -n 's/^fabric-monitor: \(fmn[0-9]*\) -> \(fmn[0-9]*\) /\1 \2 /p' "$1" \
        | while read -r src dst rep _ _ _ r50 _ o50 _; do
            echo "$src $dst $rep $(to_us "$o50") $(to_us "$r50")"
        done
}

# The same from `fabricctl links` (every job's windows of the last 5 minutes)
ctl_owd () {
    mc_exec ctl "$FM_BUILDDIR/cli/fabricctl" -u "$FM_DAEMON_URL" -m "$FM_MUNGE_SOCKET" links \
        | awk 'NR > 1 { print $1, $2, $3, $10, $8 }' \
        | while read -r src dst rep o50 r50; do
            echo "$src $dst $rep $(to_us "$o50") $(to_us "$r50")"
        done
}

# Count the "SRC DST REPORTER US" lines of stdin that match the awk condition
count_where () {
    awk "$1 { n++ } END { print n + 0 }"
}

mc_up --nodes 4
ok $? "minicluster up with 4 nodes"

# Wait until every agent has sent a window (5 s): by then each has a clock
# model for its peers (50 probes/s give the first estimate within 1-2 s).
# The summary averages the windows' medians, so most of the job must run
# with the delay: it starts in the second window of nine.
id=$(mc_sbatch -N4 -o job-%j.out --fabric-monitor=observe,rate=50 --wrap 'srun -N4 sleep 45')
t0=$(date +%s)
until [ "$(fm_get "/v1/jobs/$id" | jq '[.agents[] | select(.windows >= 1)] | length' \
    2>/dev/null)" = 4 ] || [ $(($(date +%s) - t0)) -ge 30 ]; do
    sleep 0.2
done
mc fault add fmn3 delay 2000 --dir in
ok $? "2 ms delay on traffic arriving at fmn3 once the job's 4 agents sent a window"
mc_wait_job "$id" COMPLETED 90
ok $? "the delayed job $id completes"
mc fault clear

out=$MC_HOME/job-$id.out
fm_summary_ok "$out"
ok $? "its output ends with the fabric summary"
owd=$(summary_owd "$out")
echo "$owd" | while IFS= read -r l; do diag "summary owd_p50 rtt_p50 (us): $l"; done
is "$(echo "$owd" | count_where '$2 == "fmn3"')" 6 "6 records into fmn3 in the summary"
is "$(echo "$owd" | count_where '$2 == "fmn3" && $4 != "" && $5 != "" && $4 >= 1600 && $4 >= 0.8 * $5 && $4 <= 1.2 * $5')" 6 \
    "the summary shows the one-way delay into fmn3 >= 1.6 ms and at its round trip +- 20%, from both ends"
is "$(echo "$owd" | count_where '$1 == "fmn3" && $4 != "" && $4 >= -300 && $4 <= 300')" 6 \
    "and out of fmn3 within 0.3 ms of zero"
is "$(echo "$owd" | pair_sums | count_where '$3 >= 0.8 * $4 && $3 <= 1.2 * $4')" 6 \
    "each fmn3 link's two one-way delays add up to its round trip +- 20%, for both reporters"
is "$(echo "$owd" | count_where '$1 != "fmn3" && $2 != "fmn3" && $4 != "" && $4 >= -300 && $4 <= 300')" 12 \
    "the 12 records of the links not touching fmn3 show no delay"
ctl=$(ctl_owd)
echo "$ctl" | while IFS= read -r l; do diag "fabricctl links owd_p50 rtt_p50 (us): $l"; done
is "$(echo "$ctl" | count_where '$2 == "fmn3" && $4 != "" && $5 != "" && $4 >= 1600 && $4 >= 0.8 * $5 && $4 <= 1.2 * $5')" 6 \
    "fabricctl links shows >= 1.6 ms into fmn3, at its round trip +- 20%"
is "$(echo "$ctl" | count_where '$1 == "fmn3" && $4 != "" && $4 >= -300 && $4 <= 300')" 6 \
    "and out of fmn3 within 0.3 ms of zero"
is "$(echo "$ctl" | pair_sums | count_where '$3 >= 0.8 * $4 && $3 <= 1.2 * $4')" 6 \
    "fabricctl links: each fmn3 link's two one-way delays add up to its round trip +- 20%"
is "$(echo "$ctl" | count_where '$1 != "fmn3" && $2 != "fmn3" && $4 != "" && $4 >= -300 && $4 <= 300')" 12 \
    "fabricctl links: the other 12 records show no delay"
command -v sqlite3 >/dev/null \
    && diag "clock offset estimates in job $id's windows, node: min..max ns: $(sqlite3 -readonly \
        "$FM_RUNDIR/fabricd/fabricd.db" "SELECT n.name || ': ' || coalesce (min(w.clock_offset_ns), 'null') || '..'
            || coalesce (max(w.clock_offset_ns), 'null') FROM windows w JOIN nodes n ON n.id = w.node_id
            WHERE w.job_id = $id GROUP BY n.name ORDER BY n.name;" | tr '\n' ' ')"

# 100 probes/s for about 15 s: >= 1000 per link, so 2 points are > 3
# standard errors.  The loss starts once every agent has registered: with it
# in place from the start, the plugin's prolog sometimes starts no agent on
# fmn2 (a separate problem, not what this test measures).
id=$(mc_sbatch -N4 -o job-%j.out --fabric-monitor=observe,rate=100 --wrap 'srun -N4 sleep 17')
fm_wait_agents "$id" 4 20
mc fault add fmn2 loss 5
ok $? "5% loss both ways on fmn2's cable once the job's 4 agents registered"
mc_wait_job "$id" COMPLETED 60
ok $? "the lossy job $id completes"
mc fault clear
summary=$(fm_get "/v1/jobs/$id/summary")
echo "$summary" | jq -r '.links[] | "\(.src)->\(.dst) by \(.reporter): sent \(.sent)"
    + " lost \(.lost) (\(.loss_ratio * 1000 | round / 10)%)"' \
    | while IFS= read -r l; do diag "$l"; done
links_where () {
    echo "$summary" | jq "[.links[] | select($1)] | length"
}
# One record of ~1600 probes has a standard error of 0.55 points: each is
# held to 5% -2.5/+2 points (probes sent in the second before the loss was in
# place dilute it, never add to it), and the 12 together (~20000 probes, 0.16
# points) to 5% +- 1 point.  A CI run saw one record at 2.9%.
is "$(links_where '(.src == "fmn2" or .dst == "fmn2") and .sent >= 1000
                   and .loss_ratio >= 0.025 and .loss_ratio <= 0.07')" 12 \
    "the 12 records of the 6 links touching fmn2 show 5% -2.5/+2 points over >= 1000 probes each"
is "$(echo "$summary" | jq '[.links[] | select(.src == "fmn2" or .dst == "fmn2")]
    | (map(.lost) | add) / (map(.sent) | add) | . >= 0.04 and . <= 0.06')" true \
    "and 5% +- 1 point over all 12"
is "$(links_where '.src != "fmn2" and .dst != "fmn2" and .sent >= 1000 and .loss_ratio <= 0.01')" 12 \
    "the 12 records of the other 6 links show at most 1%"
done_testing

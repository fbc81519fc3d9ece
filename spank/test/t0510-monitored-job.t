#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Acceptance: a 4-node `sbatch --fabric-monitor` job of 30 s. fabricd holds
# windows for all 12 directed links, the job's output ends with the summary,
# and every agent is gone afterwards.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 13

mc_up --nodes 4
ok $? "minicluster up with 4 nodes"
[ "$FM_PLUGIN" = yes ] && [ "$FM_FABRICD" = yes ] || { diag "plugin or fabricd missing"; exit 1; }

t0=$(mc_now)
id=$(mc_sbatch -N4 -o job-%j.out --fabric-monitor --wrap 'srun -N4 sleep 30; echo job done')
mc_wait_job "$id" RUNNING 30
ok $? "job $id runs"
sleep 8
job=$(fm_get "/v1/jobs/$id")
is "$(echo "$job" | jq '.agents | length')" 4 "all 4 agents registered while the job runs"
is "$(echo "$job" | jq -r '.mode')" observe "fabricd has the job's mode"
mc_wait_job "$id" COMPLETED 90
ok $? "the job completes"
diag "job took $(mc_elapsed "$t0" "$(mc_now)") s from submission"

summary=$(fm_get "/v1/jobs/$id/summary")
# each directed link is reported by its sender (out) and its receiver (in)
is "$(echo "$summary" | jq -r '.links[] | "\(.src)>\(.dst)"' | sort -u | wc -l)" 12 \
    "fabricd holds windows for all 12 directed links"
is "$(echo "$summary" | jq '[.links[] | select(.windows >= 5)] | length')" 24 \
    "every link has at least 5 windows from each of its two reporters"
sent=$(echo "$summary" | jq '[.links[].sent] | add')
lost=$(echo "$summary" | jq '[.links[].lost] | add')
diag "probes sent $sent, lost $lost; worst link: $(echo "$summary" | jq -c '.links[0]')"
# 3 peers share the agent's 12 probes/s: 4/s on each of the 24 reports of a
# link direction, over the 25 s or more that the job probes
ok "$([ "$sent" -ge 2250 ] && [ "$lost" -le $((sent / 100)) ]; echo $?)" \
    "about 4 probes/s on every link, under 1% lost on a clean fabric"

out=$MC_HOME/job-$id.out
grep -q '^job done$' "$out"
ok $? "the job's own output is intact"
fm_summary_ok "$out"
ok $? "the job's output ends with the fabric summary"
diag "$(tail -n 4 "$out")"
# The epilog read the summary only after every agent's last window was in:
# the count it printed is what fabricd holds now, and it has all 24 entries.
job=$(fm_get "/v1/jobs/$id")
is "$(echo "$job" | jq -c '[.agents[].final] | unique')" "[true]" \
    "every agent sent its last window as final"
hdr=$(grep '^fabric-monitor: network summary of job ' "$out")
is "$(echo "$hdr" | sed -n 's/.*: \([0-9]*\) report windows, [0-9]* link records, \([0-9]*\) links$/\1 \2/p')" \
    "$(echo "$job" | jq '[.agents[].windows] | add') 24" \
    "the summary in the output covers every window, the last ones included, and all 24 link entries"
fm_no_agents "$id" && ! grep -L 'sending the last window' "$FM_RUNDIR"/agent/fmn*/job."$id".log | grep -q .
ok $? "every agent sent its last window on SIGTERM and its state is gone"
done_testing

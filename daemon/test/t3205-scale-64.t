#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# A 64-node --fabric-monitor job on the real minicluster, leafspine 8 leaves x
# 8 nodes (issue 26): every agent registers and reports along fabricd's probe
# plan, no link row claims loss that did not happen, the plan crosses every
# leaf uplink, a 2% loss on one node's link is found and drained, a loss on one
# leaf's uplink is blamed on the uplink and drains no node, and no healthy node
# is drained. Prints what the minicluster cost (boot time, memory).
FM_TOP_SRCDIR=${FM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FM_BUILDDIR=${FM_BUILDDIR:-${FM_TOP_BUILDDIR:-}}
export FM_BUILDDIR FM_SRCDIR=$FM_TOP_SRCDIR
. "$FM_SRCDIR/spank/test/sys.sh"
MC_EXCLUSIVE=1 # 64 nodes: no other minicluster beside it
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 11

N=64
conf=$(mktemp)
cat >"$conf" <<'EOF'
report_window = 2s
persist_windows = 2
recover_windows = 3
resume_windows = 3
EOF
mem0=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
t0=$(mc_now)
mc_up --nodes $N --topology leafspine --leaves 8 --fabricd-conf "$conf"
ok $? "minicluster up: $N nodes behind 8 leaves" || exit 1
t_up=$(mc_elapsed "$t0" "$(mc_now)")
rm -f "$conf"
mem1=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
diag "boot: $t_up s, $(( (mem0 - mem1) / 1024 )) MiB of memory taken"

ctl () { mc_exec ctl "$FM_BUILDDIR/cli/fabricctl" -u "$FM_DAEMON_URL" -m "$FM_MUNGE_SOCKET" "$@"; }
node_bad () {
    fm_get /v1/fabric | jq -e --arg n "node:$1" \
        '[.elements[] | select(.name == $n and (.state == "degraded" or .state == "failed"))] | length > 0' \
        >/dev/null
}
node_drained () { mc_node_state "$1" | grep -q DRAIN; }
uplink_bad () {
    fm_get /v1/fabric | jq -e --arg l "$1" \
        '[.elements[] | select((.name | startswith("uplink:" + $l)) or .name == "switch:" + $l)
          | select(.state == "degraded" or .state == "failed")] | length > 0' >/dev/null
}
drained_list () { mc_exec ctl sinfo -h -R -o '%N' | tr '\n' ' '; }

id=$(mc_sbatch -N$N -o scale-%j.out --fabric-monitor=observe --wrap 'sleep 240')
mc_wait_job "$id" RUNNING 60
fm_wait_agents "$id" $N 60
ok $? "all $N agents registered"
sleep 12

job=$(fm_get "/v1/jobs/$id")
is "$(echo "$job" | jq '[.agents[] | select(.windows > 0)] | length')" $N \
    "all $N agents report windows"

# the plan as each agent got it: targets per node, and the leaf uplinks it crosses
: >"$MC_TMP/plan"
max_bytes=0
for i in $(seq $N); do
    a=$(fm_get "/v1/jobs/$id/peers?node=fmn$i")
    b=${#a}
    [ "$b" -gt "$max_bytes" ] && max_bytes=$b
    echo "$a" | jq -r --arg me "fmn$i" '.targets[] | "\($me) \(.)"' >>"$MC_TMP/plan"
done
diag "rendezvous answer: at most $max_bytes bytes per agent (64 nodes)"
leaf () { echo $(( (${1#fmn} - 1) / 8 + 1 )); }
short=
for l in $(seq 8); do
    # distinct nodes whose probes cross leaf l's uplink, out or in
    crossing=$(while read -r a b; do
        la=$(leaf "$a"); lb=$(leaf "$b")
        [ "$la" != "$lb" ] && { [ "$la" = "$l" ] || [ "$lb" = "$l" ]; } && echo "$a"
    done <"$MC_TMP/plan" | sort -u | wc -l)
    [ "$crossing" -ge 3 ] || short="$short leaf$l:$crossing"
    diag "leaf$l uplink: crossed by the probes of $crossing nodes"
done
is "$short" "" "the plan crosses every leaf uplink with at least 3 probing nodes"

summary=$(fm_get "/v1/jobs/$id/summary?worst=10000")
lossy=$(echo "$summary" | jq '[.links[] | select(.sent >= 10 and .loss_ratio > 0.05)] | length')
is "$lossy" 0 "no link row claims loss in the healthy fabric ($(echo "$summary" | jq .nlinks) links)"
[ "$lossy" = 0 ] || echo "$summary" | jq -c '[.links[] | select(.sent >= 10 and .loss_ratio > 0.05)][:5]' \
    | while IFS= read -r l; do diag "$l"; done

# 2% on one node's link, both directions
victim=fmn29
mc fault add $victim loss 2
tf=$(mc_now)
mc_wait_until 60 node_bad $victim
ok $? "2% loss on $victim's link: found"
t_found=$(mc_elapsed "$tf" "$(mc_now)")
mc_wait_until 60 node_drained $victim
rc=$?
t_drained=$(mc_elapsed "$tf" "$(mc_now)")
ok $rc "and drained ($(mc_node_reason $victim))"
diag "2% loss on $victim: found after $t_found s, drained after $t_drained s"
awk -v t="$t_drained" 'BEGIN { exit !(t <= 30) }'
ok $? "drained within 30 s of the fault ($t_drained s; found after $t_found s)"
mc fault clear
is "$(drained_list)" "$victim " "no other node is drained"
ctl resume $victim --force >/dev/null

# 5% on leaf3's uplink: the uplink (or leaf3), and no drain
sleep 8
mc fault add leaf3-uplink loss 5
mc_wait_until 60 uplink_bad leaf3
ok $? "5% loss on leaf3's uplink: blamed on the uplink or leaf3"
sleep 8
is "$(drained_list)" "" "no node is drained for it"
mc fault clear
mc_exec ctl scancel "$id"
done_testing

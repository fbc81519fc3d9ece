#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# A flapping link (`fault add fmn3 flap 5`: its switch port down and up every
# 5 s) as the agents see it: each node reads its own network namespace's sysfs
# (mounted inside the node, linked from a fixture tree so that the veth counts
# as a NIC), so fmn3's agent reports carrier changes and the others none; the
# links that lose probes all touch fmn3, and no link without fmn3 does.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 7

hroot=$MC_TMP/hroot
nsys=$MC_TMP/nsys

mc_up --nodes 4
ok $? "minicluster up with 4 nodes"
[ "$FM_PLUGIN" = yes ] && [ "$FM_FABRICD" = yes ] || { diag "plugin or fabricd missing"; exit 1; }
mkdir -p "$nsys"
rc=0
for n in $FM_NODES; do
    # a sysfs mounted in the node's namespaces shows the node's own netdevs;
    # the mount stays private to the node's mount namespace
    mc_exec "$n" mount -t sysfs sysfs "$nsys" || rc=1
    d=$hroot/$n/sys/class/net/eth0
    mkdir -p "$d"
    ln -s . "$d/device" # a "hardware" NIC: veth has no device link
    for f in operstate carrier speed carrier_changes statistics; do
        ln -s "$nsys/class/net/eth0/$f" "$d/$f"
    done
done
mc_exec fmn3 cat "$hroot/fmn3/sys/class/net/eth0/operstate" | grep -qx up || rc=1
ok $rc "each node's fixture tree shows its own eth0 (up)"
sed -i "s|^optional .*fabric_monitor.so .*|& health_root=$hroot/%n|" "$FM_RUNDIR/etc/plugstack.conf"

id=$(mc_sbatch -N4 -o job-%j.out --fabric-monitor=observe,rate=20 --wrap 'srun -N4 sleep 40')
t0=$(date +%s)
fm_wait_agents "$id" 4 20
mc fault add fmn3 flap 5
ok $? "fmn3's link flaps every 5 s once the job's 4 agents registered"
# the latest window of each node, once a second, while the link flaps: the
# most carrier changes each node reported
declare -A maxcc
for n in $FM_NODES; do maxcc[$n]=0; done
t0=$(date +%s)
while [ $(($(date +%s) - t0)) -lt 25 ]; do
    while read -r n cc; do
        [ -n "$n" ] && [ "$cc" -gt "${maxcc[$n]:-0}" ] && maxcc[$n]=$cc
    done < <(fm_get /v1/nodes | jq -r '.nodes[] | "\(.node) \([.health[] | select(.type == "nic" and .name == "eth0") | .carrier_changes] | add // 0)"')
    sleep 1
done
mc fault clear
mc_wait_job "$id" COMPLETED 60
ok $? "the job completes"
diag "most carrier changes in one window: $(for n in $FM_NODES; do printf '%s=%s ' "$n" "${maxcc[$n]}"; done)"
ok "$([ "${maxcc[fmn3]}" -ge 1 ] && [ "${maxcc[fmn1]}${maxcc[fmn2]}${maxcc[fmn4]}" = 000 ]; echo $?)" \
    "carrier changes come from fmn3 only"

links=$(fm_get "/v1/links?since=300s")
echo "$links" | jq -r '.links[] | "\(.src)->\(.dst) by \(.reporter): sent \(.sent) lost \(.lost)"' \
    | while IFS= read -r l; do diag "$l"; done
# the nodes common to every link that lost more than 5% of its probes
is "$(echo "$links" | jq -c '[.links[] | select(.loss_ratio > 0.05) | [.src, .dst]]
        | if length == 0 then [] else reduce .[] as $l (.[0]; [.[] | select(. as $n | $l | index($n))]) end')" \
    '["fmn3"]' "every lossy link touches fmn3: the evidence implicates fmn3 alone"
is "$(echo "$links" | jq '[.links[] | select(.src != "fmn3" and .dst != "fmn3" and .loss_ratio > 0.02)] | length')" 0 \
    "no link between the other nodes lost more than 2%"
done_testing

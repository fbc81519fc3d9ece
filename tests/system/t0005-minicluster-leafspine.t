#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The leaf/spine minicluster: 8 nodes on 2 leaves boot and go down in under
# 30 s, Slurm's topology.conf matches the wiring, and a fault on a leaf uplink
# affects exactly the cross-leaf paths.
. "${srcdir:-.}/../tap.sh"
. "${srcdir:-.}/lib.sh"
mc_require
plan 15

t0=$(mc_now)
mc_up --nodes 8 --topology leafspine --leaves 2
ok $? "up --nodes 8 --topology leafspine --leaves 2"
t_up=$(mc_elapsed "$t0" "$(mc_now)")

idle=$(mc_exec ctl sinfo -h -N -o '%N %T' | awk '$2 == "idle"' | wc -l)
is "$idle" 8 "8 nodes are idle"
is "$(grep '^SwitchName' "$MC_RUNDIR/etc/topology.conf" | tr '\n' ' ')" \
    "SwitchName=leaf1 Nodes=fmn1,fmn2,fmn3,fmn4 SwitchName=leaf2 Nodes=fmn5,fmn6,fmn7,fmn8 SwitchName=spine Switches=leaf1,leaf2 " \
    "topology.conf describes two leaves under one spine"
topo=$(mc_exec ctl scontrol show topology)
echo "$topo" | grep -q 'SwitchName=leaf2 .*Nodes=fmn5,fmn6,fmn7,fmn8' \
    && echo "$topo" | grep -q 'SwitchName=spine Level=1 .*Switches=leaf1,leaf2'
ok $? "slurmctld loaded that topology"
is "$(mc_exec leaf2 ip -o link show master br0 | grep -o 'v-fmn[0-9]*' | tr '\n' ' ')" \
    "v-fmn5 v-fmn6 v-fmn7 v-fmn8 " "leaf2's switch holds exactly fmn5..fmn8"
id=$(mc_sbatch -N2 -w fmn1,fmn8 -o job-%j.out --wrap 'srun hostname | sort')
mc_wait_job "$id" COMPLETED 30
is "$(tr '\n' ' ' <"$MC_HOME/job-$id.out")" "fmn1 fmn8 " "a cross-leaf job runs"

leaf_of () { [ "${1#fmn}" -le 4 ] && echo 1 || echo 2; }

# Reachability of every node pair, probed in parallel: lines "fmnA-fmnB:ok|lost".
all_pairs () {
    local a b
    for a in $(seq 8); do
        for b in $(seq $((a + 1)) 8); do
            mc_ping_loss "fmn$a" "fmn$b" 2 0.05 >"$MC_TMP/pair-fmn$a-fmn$b" &
        done
    done
    wait
    for a in $(seq 8); do
        for b in $(seq $((a + 1)) 8); do
            echo "fmn$a-fmn$b:$([ "$(cat "$MC_TMP/pair-fmn$a-fmn$b")" = 0 ] && echo ok || echo lost)"
        done
    done
}

mc fault add leaf2-uplink down
ok $? "fault add leaf2-uplink down"
wrong=
for p in $(all_pairs); do
    a=${p%%-*}; b=${p#*-}; b=${b%%:*}
    want=ok
    [ "$(leaf_of "$a")" = "$(leaf_of "$b")" ] || want=lost
    [ "${p##*:}" = "$want" ] || wrong="$wrong $p"
done
is "$wrong" "" "all 12 intra-leaf pairs still talk and all 16 cross-leaf pairs are cut"
is "$(mc_ping_loss ctl fmn6 3 0.05):$(mc_ping_loss ctl fmn2 3 0.05)" 100:0 \
    "the controller (on the spine) loses leaf2 only"
mc fault clear leaf2-uplink
# Pairs that never resolved each other's address during the cut need up to a
# second of ARP retries, as on a real network.
for pair in "fmn1 fmn5" "fmn8 fmn4"; do
    for i in $(seq 30); do
        [ "$(mc_ping_loss $pair 1 0.1)" = 0 ] && break
    done
done
is "$(mc_ping_loss fmn1 fmn5 5 0.05):$(mc_ping_loss fmn8 fmn4 5 0.05)" 0:0 "clear reconnects the leaves"

if [ -x "$FM_BUILDDIR/contrib/minicluster/fm-delayq" ]; then
    mc fault add leaf1-uplink delay 3000 --dir in
    rtt_cross=$(mc_ping_rtt fmn6 fmn2 20 0.02)
    rtt_intra1=$(mc_ping_rtt fmn1 fmn2 20 0.02)
    rtt_intra2=$(mc_ping_rtt fmn5 fmn7 20 0.02)
    mc_within "$rtt_cross" 2.9 6 && mc_within "$rtt_intra1" 0 1.5 && mc_within "$rtt_intra2" 0 1.5
    ok $? "leaf1 uplink delay: cross-leaf rtt $rtt_cross ms, intra-leaf $rtt_intra1 and $rtt_intra2 ms"
    mc fault clear
else
    skip "fm-delayq not built (configure found no libnetfilter_queue)"
fi

mc fault add leaf2-uplink loss 30 --dir out
l_cross=$(mc_ping_loss fmn7 fmn3 500 0.002)
l_intra=$(mc_ping_loss fmn7 fmn8 200 0.002)
mc_within "$l_cross" 23 37 && [ "$l_intra" = 0 ]
ok $? "leaf2 uplink loss 30 --dir out: cross-leaf $l_cross%, intra-leaf $l_intra%"
mc fault clear

t0=$(mc_now)
mc_down
ok $? "down"
t_down=$(mc_elapsed "$t0" "$(mc_now)")
total=$(awk -v a="$t_up" -v b="$t_down" 'BEGIN { printf "%.1f", a + b }')
mc_within "$total" 0 30
ok $? "up ($t_up s) plus down ($t_down s) of 8 leaf/spine nodes took $total s (< 30 s)"
test ! -e "$MC_RUNDIR"
ok $? "the run directory is gone"
done_testing

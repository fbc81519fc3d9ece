#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# NCCL steering: every node reads a fixture sysfs tree (plugstack
# health_root=DIR/%n) with two HCAs, mlx5_0 and mlx5_1, both ACTIVE. While the
# job runs, fmn2's mlx5_1 port 1 goes DOWN (the test rewrites the tree). A step
# started before sees no NCCL_IB_HCA anywhere; a step started after sees
# NCCL_IB_HCA=^=mlx5_1:1 on fmn2 only; a step whose user set NCCL_IB_HCA keeps
# the user's value; fabricd accepted every window (the ib_port DOWN and steer
# records among them); the job's summary says fmn2 was steered.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 10

hroot=$MC_TMP/hroot

# port HCA STATE PHYS LINK_DOWNED on node N's tree
port () {
    local d=$hroot/$1/sys/class/infiniband/$2/ports/1 c
    mkdir -p "$d/counters"
    echo "$3" >"$d/state.tmp" && mv "$d/state.tmp" "$d/state"
    echo "$4" >"$d/phys_state.tmp" && mv "$d/phys_state.tmp" "$d/phys_state"
    echo "200 Gb/sec (4X HDR)" >"$d/rate"
    echo "InfiniBand" >"$d/link_layer"
    for c in symbol_error link_error_recovery port_rcv_errors port_xmit_discards \
        port_xmit_wait; do
        echo 0 >"$d/counters/$c"
    done
    echo "$5" >"$d/counters/link_downed"
}

mc_up --nodes 3
ok $? "minicluster up with 3 nodes"
[ "$FM_PLUGIN" = yes ] && [ "$FM_FABRICD" = yes ] || { diag "plugin or fabricd missing"; exit 1; }
for n in $FM_NODES; do
    port "$n" mlx5_0 "4: ACTIVE" "5: LinkUp" 0
    port "$n" mlx5_1 "4: ACTIVE" "5: LinkUp" 0
done
# plugstack.conf is read by every prolog and step: the agents read the trees
sed -i "s|^optional .*fabric_monitor.so .*|& health_root=$hroot/%n|" "$FM_RUNDIR/etc/plugstack.conf"
grep -q "health_root=$hroot/%n" "$FM_RUNDIR/etc/plugstack.conf"
ok $? "plugstack.conf points the agents at the fixture trees"

step='srun -N3 --ntasks-per-node=1 sh -c '\''echo "$1 $(hostname) hca=${NCCL_IB_HCA:-none}"'\'' sh'
id=$(mc_sbatch -N3 -o job-%j.out --fabric-monitor \
    --wrap "$step before; while [ ! -e go.\$SLURM_JOB_ID ]; do sleep 0.2; done;
            $step after; NCCL_IB_HCA=mlx5_0 $step user; sleep 6")
out=$MC_HOME/job-$id.out
t0=$(date +%s)
until [ "$(grep -c ' before ' "$out" 2>/dev/null)" = 3 ] || [ $(($(date +%s) - t0)) -ge 40 ]; do
    sleep 0.2
done
is "$(grep -c '^before fmn[0-9] hca=none$' "$out")" 3 "a step before the fault sees no NCCL_IB_HCA"

port fmn2 mlx5_1 "1: DOWN" "2: Polling" 1
steer=$FM_RUNDIR/agent/fmn2/job.$id/nccl_ib_hca
t0=$(date +%s)
until [ "$(cat "$steer" 2>/dev/null)" = mlx5_1:1 ] || [ $(($(date +%s) - t0)) -ge 20 ]; do
    sleep 0.2
done
is "$(cat "$steer" 2>/dev/null)" mlx5_1:1 \
    "within a window fmn2's agent names mlx5_1:1 degraded ($(($(date +%s) - t0)) s)"
ok "$(for n in fmn1 fmn3; do [ ! -e "$FM_RUNDIR/agent/$n/job.$id/nccl_ib_hca" ] || exit 1; done; echo $?)" \
    "the other nodes' agents exclude nothing"
touch "$MC_HOME/go.$id"
mc_wait_job "$id" COMPLETED 60
ok $? "the job completes"
diag "$(grep -E '^(before|after|user) ' "$out" | sort | tr '\n' ';')"
is "$(grep -E '^after ' "$out" | sort | tr '\n' ' ')" \
    "after fmn1 hca=none after fmn2 hca=^=mlx5_1:1 after fmn3 hca=none " \
    "a step started after the fault gets NCCL_IB_HCA=^=mlx5_1:1 on fmn2 only"
is "$(grep -E '^user ' "$out" | sort | tr '\n' ' ')" \
    "user fmn1 hca=mlx5_0 user fmn2 hca=mlx5_0 user fmn3 hca=mlx5_0 " \
    "the job's own NCCL_IB_HCA is kept"
# every window was accepted: none refused, and fmn2's latest carries both records
nodes=$(fm_get /v1/nodes)
refused=$(grep -h 'windows delivered' "$FM_RUNDIR"/agent/fmn*/job."$id".log | grep -vc ' 0 refused')
is "$(echo "$nodes" | jq -c '[.nodes[] | select(.node == "fmn2") | .health[]
        | select(.type == "steer" or (.type == "ib_port" and .state == "DOWN"))
        | .type] | sort')|$refused" '["ib_port","steer"]|0' \
    "fabricd accepted every window; fmn2's latest has the DOWN port and the steer record"
grep -q '^fabric-monitor: steering fmn2: NCCL_IB_HCA=^=mlx5_1:1 ' "$out"
ok $? "the job's summary says fmn2's steps were steered off mlx5_1:1"
diag "$(grep '^fabric-monitor: \(steering\|health\|action\)' "$out")"
done_testing

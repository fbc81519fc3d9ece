#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The minicluster boots with 4, 8 and 16 nodes: every node idle, each member
# with its own hostname, address and /tmp, a shared job directory, the env
# file, and refusals for bad arguments or a second cluster in the same place.
. "${srcdir:-.}/../tap.sh"
. "${srcdir:-.}/lib.sh"
mc_require
plan 31

boot_checks () {
    local n=$1 i idle names
    idle=$(mc_exec ctl sinfo -h -N -o '%N %T' | awk '$2 == "idle"' | wc -l)
    is "$idle" "$n" "$n nodes are idle after up"
    names=
    for i in $(seq "$n"); do
        names="$names$(mc_exec "fmn$i" hostname) "
    done
    is "$names" "$(for i in $(seq "$n"); do printf 'fmn%d ' "$i"; done)" \
        "each of the $n nodes has its own hostname"
    is "$(mc_exec "fmn$n" ip -4 -o addr show dev eth0 | awk '{ print $4 }')" \
        "10.77.0.$((10 + n))/24" "fmn$n has its own address"
}

mc_up --nodes 4
ok $? "up --nodes 4"
boot_checks 4
is "$(mc_exec ctl hostname)" fmctl "the controller is fmctl"
mc_exec fmn1 ping -c1 -W2 -q fmn4 >/dev/null
ok $? "fmn1 reaches fmn4 by name"
mc_exec fmn1 ip route | grep -q default
ok $((! $?)) "no default route leaves the cluster"
mc_exec fmn1 sh -c 'echo one > /tmp/fm-private'
mc_exec fmn2 test -e /tmp/fm-private
ok $((! $?)) "nodes have a private /tmp"
test ! -e /tmp/fm-private
ok $? "the host's /tmp is untouched"
mc_exec fmn3 sh -c "echo shared > $MC_HOME/fm-shared"
is "$(mc_exec fmn2 cat "$MC_HOME/fm-shared")" shared "the job directory is shared by all nodes"
case $FM_RUNDIR in /tmp/*) false ;; *) true ;; esac
ok $? "the run directory is outside /tmp"
test -S "$FM_MUNGE_SOCKET" && [ "$SLURM_CONF" = "$MC_RUNDIR/etc/slurm.conf" ] \
    && [ "$FM_DAEMON_URL" = http://10.77.0.1:8470 ]
ok $? "the env file exports FM_MUNGE_SOCKET, SLURM_CONF and FM_DAEMON_URL"
grep -q '^PrologFlags=Alloc' "$SLURM_CONF" && grep -q "^PlugStackConfig=$MC_RUNDIR/etc/plugstack.conf" "$SLURM_CONF"
ok $? "slurm.conf has PrologFlags=Alloc and the generated plugstack.conf"
if [ -f "$FM_BUILDDIR/spank/.libs/fabric_monitor.so" ]; then
    grep -q "^optional $FM_BUILDDIR/spank/.libs/fabric_monitor.so daemon=http://10.77.0.1:8470" \
        "$MC_RUNDIR/etc/plugstack.conf"
    ok $? "plugstack.conf loads the SPANK plugin from the build tree"
else
    ! grep -q '^optional' "$MC_RUNDIR/etc/plugstack.conf"
    ok $? "plugstack.conf loads nothing while the plugin is not built"
fi
status=$(mc status)
echo "$status" | grep -q 'fmn4 .*10.77.0.14 .*slurmd:up' && echo "$status" | grep -q 'slurmctld:up'
ok $? "status lists members, addresses and live daemons"
mc up --nodes 4 >/dev/null 2>&1
ok $((! $?)) "a second up in the same run directory is refused"
mc_exec fmn9 true >/dev/null 2>&1
ok $((! $?)) "exec on a node that does not exist fails"
mc_down
ok $? "down"

"$MC" --rundir "$MC_RUNDIR" --build "$FM_BUILDDIR" up --nodes 0 >/dev/null 2>&1
ok $((! $?)) "up --nodes 0 is refused"
"$MC" --rundir /tmp/fm-mc-bad --build "$FM_BUILDDIR" up >/dev/null 2>&1
ok $((! $?)) "a run directory under /tmp is refused"

mc_up --nodes 8
ok $? "up --nodes 8"
boot_checks 8
mc_down
ok $? "down"

mc_up --nodes 16
ok $? "up --nodes 16"
boot_checks 16
is "$(cd "$MC_HOME" && mc_exec ctl srun -N16 hostname | sort -u | wc -l)" 16 \
    "a 16-node step runs once on each node"
mc_down
ok $? "down"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The plugin in real Slurm: the option in every client, bad values refused
# with a clear message, the task environment, and jobs that do not ask left
# alone.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
plan 16

mc_up --nodes 2
ok $? "minicluster up"
[ "$FM_PLUGIN" = yes ] || { diag "plugin not loaded"; exit 1; }

for cmd in sbatch srun salloc; do
    mc_exec ctl "$cmd" --help 2>&1 | grep -q -- '--fabric-monitor=\[MODE\]\[,rate=N\]'
    ok $? "$cmd --help lists --fabric-monitor"
done

out=$(cd "$MC_HOME" && mc_exec ctl sbatch --fabric-monitor=bogus --wrap true 2>&1)
rc=$?
ok "$([ $rc -ne 0 ]; echo $?)" "sbatch --fabric-monitor=bogus is refused (rc $rc)"
echo "$out" | grep -q "fabric-monitor: invalid value 'bogus' (want observe, protect or off"
ok $? "with a message naming the value and the choices"
diag "$out"
out=$(cd "$MC_HOME" && mc_exec ctl srun --fabric-monitor=observe,rate=0 true 2>&1)
ok "$([ $? -ne 0 ]; echo $?)" "srun --fabric-monitor=observe,rate=0 is refused"
echo "$out" | grep -q "invalid rate '0'"
ok $? "naming the rate"

# An option without argument reaches every srun of the job as "(null)":
# those steps must still run, with the task environment set.
id=$(mc_sbatch -N2 -o job-%j.out --fabric-monitor \
    --wrap 'srun -N2 sh -c "echo \$(hostname) \$FABRIC_MONITOR \$FABRIC_MONITOR_MODE" | sort; echo summary=$FABRIC_MONITOR_SUMMARY; echo daemon=$FABRIC_MONITOR_DAEMON; echo check=$FABRIC_MONITOR_CHECK')
mc_wait_job "$id" COMPLETED 60
ok $? "a monitored job with steps completes"
out=$MC_HOME/job-$id.out
is "$(grep '^fmn' "$out" | tr '\n' ' ')" "fmn1 1 observe fmn2 1 observe " \
    "its tasks see FABRIC_MONITOR=1 and the mode"
is "$(sed -n 's/^summary=//p' "$out")" "$FM_DAEMON_URL/v1/jobs/$id/summary" \
    "and where the summary lives"
is "$(sed -n 's/^daemon=//p' "$out")" "$FM_DAEMON_URL" "and fabricd's URL, for fabric-check"
case $(sed -n 's/^check=//p' "$out") in
    /*fabric-check) ok 0 "and fabric-check's path" ;;
    *) ok 1 "and fabric-check's path (got '$(sed -n 's/^check=//p' "$out")')" ;;
esac

id=$(mc_sbatch -N2 -o job-%j.out --fabric-monitor=protect,rate=20 \
    --wrap 'echo mode=$FABRIC_MONITOR_MODE')
mc_wait_job "$id" COMPLETED 60
is "$(grep '^mode=' "$MC_HOME/job-$id.out")" "mode=protect" "protect,rate=20 is accepted"
fm_get "/v1/jobs/$id" | grep -q '"mode": *"protect"'
ok $? "and fabricd holds the job as protect"

id=$(mc_sbatch -N2 -o job-%j.out --wrap 'echo monitor=${FABRIC_MONITOR:-unset}')
mc_wait_job "$id" COMPLETED 60
ok "$(grep -q '^monitor=unset$' "$MC_HOME/job-$id.out" \
    && [ ! -e "$FM_RUNDIR/agent/fmn1/job.$id.log" ] && ! grep -q fabric-monitor: "$MC_HOME/job-$id.out"; echo $?)" \
    "a job without the option: no agent, no environment, no summary"
done_testing

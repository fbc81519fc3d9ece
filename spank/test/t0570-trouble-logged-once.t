#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Trouble is logged once, not per step, retry or packet, and never stops a
# job (t0520 shows the jobs finish; this counts the log lines):
# - agent binary missing, a job of three steps: one line per node;
# - daemon URL refused (nothing listens there): the agents' complaints about
#   fabricd do not grow with the retries;
# - thousands of garbage datagrams of four kinds sent to an agent's probe
#   port during a monitored job: one line per kind, the drops all counted,
#   probing itself undisturbed.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 15

# lines of FILES matching the extended regex RE
count () {
    local re=$1
    shift
    cat "$@" 2>/dev/null | grep -cE "$re"
}

mc_up --nodes 2
ok $? "minicluster up"
conf=$FM_RUNDIR/etc/plugstack.conf
cp "$conf" "$conf.orig"
slurmd_logs=("$FM_RUNDIR"/log/slurmd-fmn1.log "$FM_RUNDIR"/log/slurmd-fmn2.log)

sed -i 's|agent=[^ ]*|agent=/nonexistent/fabric-agent|' "$conf"
id=$(mc_sbatch -N2 -o job-%j.out --fabric-monitor \
    --wrap 'srun -N2 true; srun -N2 true; srun -N2 true; echo ran')
mc_wait_job "$id" COMPLETED 60
ok $? "agent binary missing: the 3-step job completes"
is "$(cat "$MC_HOME/job-$id.out")" "ran" "its output is its own"
is "$(count "fabric-monitor: job $id: agent /nonexistent/fabric-agent: No such file or directory; not monitored" \
    "${slurmd_logs[@]}")" 2 "the reason is logged once per node, not per step"
is "$(count "fabric-monitor: job $id" "${slurmd_logs[@]}")" 2 "and nothing else about the job"

cp "$conf.orig" "$conf"
# fmctl answers, nothing listens on port 1: every attempt is refused at once
sed -i 's|daemon=[^ ]*|daemon=http://10.77.0.1:1|' "$conf"
id=$(mc_sbatch -N2 -o job-%j.out --fabric-monitor --wrap 'srun -N2 sleep 20; echo ran')
mc_wait_job "$id" COMPLETED 60
ok $? "daemon URL refused: the 20 s job completes"
is "$(cat "$MC_HOME/job-$id.out")" "ran" "its output is its own"
alogs=("$FM_RUNDIR"/agent/fmn1/job."$id".log "$FM_RUNDIR"/agent/fmn2/job."$id".log)
for f in "${alogs[@]}" "${slurmd_logs[@]}"; do
    grep -E "10\.77\.0\.1:1|job $id|fabricd" "$f" | while IFS= read -r l; do diag "$(basename "$f"): $l"; done
done
is "$(count 'registration with .* failed' "${alogs[@]}")" 2 \
    "each agent logs the refused registration once, not once per retry (20 s of them)"
is "$(count "fabric-monitor: job $id" "${slurmd_logs[@]}")" 2 \
    "slurmd logs one line per node about the job (its agent's start)"
cp "$conf.orig" "$conf"

id=$(mc_sbatch -N2 -o job-%j.out --fabric-monitor --wrap 'srun -N2 sleep 15; echo ran')
mc_wait_job "$id" RUNNING 30
fm_wait_agents "$id" 2 15
port=$(fm_get "/v1/jobs/$id" | jq '.agents[] | select(.node == "fmn1") | .probe_port')
# 4 kinds x 500, spread over about 8 s: wrong size, no magic, another
# version, a probe-shaped datagram with a forged tag
mc_exec fmn2 perl -e '
    use IO::Socket::INET;
    my $s = IO::Socket::INET->new (Proto => "udp", PeerAddr => $ARGV[0],
                                   PeerPort => $ARGV[1]) or die "socket: $!";
    my @kinds = ("garbage", "x" x 168, "FMPR\x01" . ("\0" x 163), "FMPR\x02" . ("\0" x 163));
    for my $i (1 .. 500) {
        $s->send ($_) or die "send: $!" for @kinds;
        select (undef, undef, undef, 0.016);
    }' 10.77.0.11 "$port"
ok $? "2000 garbage datagrams sent to fmn1's agent (port $port)"
mc_wait_job "$id" COMPLETED 60
ok $? "the monitored job completes"
out=$MC_HOME/job-$id.out
grep -q '^ran$' "$out" && fm_summary_ok "$out"
ok $? "its output is intact and ends with the fabric summary"
alog=$FM_RUNDIR/agent/fmn1/job.$id.log
grep 'dropping\|dropped' "$alog" | while IFS= read -r l; do diag "fmn1 agent: $l"; done
is "$(grep -oE 'dropping probe datagrams from [^:]*: [a-z_]+' "$alog" | sort | uniq -c \
    | awk '{ print $1, $NF }' | tr '\n' ' ')" "1 bad_magic 1 bad_size 1 bad_tag 1 bad_version " \
    "fmn1's agent logs each kind of garbage once"
is "$(sed -n 's/.*; dropped \([0-9]*\) bad datagrams;.*/\1/p' "$alog")" 2000 \
    "and counts all 2000 drops"
summary=$(fm_get "/v1/jobs/$id/summary")
is "$(echo "$summary" | jq '[.links[] | select(.sent >= 100 and .lost == 0)] | length')" 4 \
    "probing went on undisturbed: both directions, both reporters, nothing lost"
done_testing

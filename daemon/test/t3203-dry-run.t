#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# dry_run = yes: the decisions are made and recorded (a drain for the lossy
# node, flagged as a dry run), and Slurm is never changed: no drain, no weight,
# not even an administrator's drain through fabricctl.
FM_TOP_SRCDIR=${FM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FM_BUILDDIR=${FM_BUILDDIR:-${FM_TOP_BUILDDIR:-}}
export FM_BUILDDIR FM_SRCDIR=$FM_TOP_SRCDIR
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 8

conf=$(mktemp)
cat >"$conf" <<'EOF'
report_window = 2s
dry_run = yes
EOF
mc_up --nodes 4 --fabricd-conf "$conf"
ok $? "minicluster up with 4 nodes, fabricd in dry run" || exit 1
rm -f "$conf"

ctl () { mc_exec ctl "$FM_BUILDDIR/cli/fabricctl" -u "$FM_DAEMON_URL" -m "$FM_MUNGE_SOCKET" "$@"; }
drain_decided () {
    [ "$(fm_get '/v1/actions?node=fmn2' | jq '[.actions[] | select(.kind == "drain")] | length')" -ge 1 ]
}
weights () { mc_exec ctl scontrol -o show node | sed -n 's/.* Weight=\([0-9]*\).*/\1/p' | sort -u | tr '\n' ' '; }

is "$(fm_get /v1/fabric | jq -r .dry_run)" true "GET /v1/fabric says dry run"
w0=$(weights)
id=$(mc_sbatch -N4 -o dry-%j.out --fabric-monitor=observe --wrap 'sleep 45')
mc_wait_job "$id" RUNNING 30
t0=$(date +%s)
fm_wait_agents "$id" 4 30
sleep 4
mc fault add fmn2 loss 5
t0=$(date +%s)
until drain_decided || [ $(($(date +%s) - t0)) -ge 40 ]; do
    sleep 0.5
done
a=$(fm_get '/v1/actions?node=fmn2' | jq -c '[.actions[] | select(.kind == "drain")][0]')
diag "$a"
is "$(echo "$a" | jq -r '"\(.result) \(.dry_run)"')" "dry_run true" \
    "the drain of fmn2 is decided and recorded as a dry run"
echo "$a" | jq -r .reason | grep -q '^fabric: loss: '
ok $? "with the reason it would have: $(echo "$a" | jq -r .reason)"
sleep 4
is "$(mc_exec ctl sinfo -h -R | wc -l)" 0 "but no node is drained"
is "$(weights)" "$w0" "and no weight changed"
out=$(ctl drain fmn3 --reason "test")
is "$(mc_exec ctl sinfo -h -R | wc -l)" 0 "fabricctl drain changes nothing either ($out)"
mc fault clear
mc_wait_job "$id" COMPLETED 60
ok $? "the job completes"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Leaf/spine with 3 leaves (with 2, the two uplinks are on every cross-leaf
# path and cannot be told apart): loss on a leaf's uplink blames the uplink, not the nodes behind
# it, and drains nothing. Then an administrator's drain and resume through
# fabricctl: a manual drain is never resumed by fabricd, someone else's reason
# needs --force.
FM_TOP_SRCDIR=${FM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FM_BUILDDIR=${FM_BUILDDIR:-${FM_TOP_BUILDDIR:-}}
export FM_BUILDDIR FM_SRCDIR=$FM_TOP_SRCDIR
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 15

conf=$(mktemp)
cat >"$conf" <<'EOF'
report_window = 2s
persist_windows = 2
recover_windows = 3
resume_windows = 3
EOF
mc_up --nodes 6 --topology leafspine --leaves 3 --fabricd-conf "$conf"
ok $? "minicluster up: 6 nodes behind 3 leaves" || exit 1
rm -f "$conf"

ctl () { mc_exec ctl "$FM_BUILDDIR/cli/fabricctl" -u "$FM_DAEMON_URL" -m "$FM_MUNGE_SOCKET" "$@"; }
uplink_state () {
    fm_get /v1/fabric | jq -r '.elements[] | select(.name | startswith("uplink:leaf1")) | .state' | head -1
}
bad_uplink () { case $(uplink_state) in degraded | failed) return 0 ;; esac; return 1; }

is "$(fm_get /v1/fabric | jq -r .topology)" tree "fabricd read the tree topology beside slurm.conf"

id=$(mc_sbatch -N6 -o up-%j.out --fabric-monitor=observe --wrap 'sleep 75')
mc_wait_job "$id" RUNNING 30
fm_wait_agents "$id" 6 30
sleep 6
mc fault add leaf1-uplink loss 5
mc_wait_until 40 bad_uplink
ok $? "5% loss on leaf1's uplink: the uplink is blamed ($(uplink_state))"
sleep 6 # more windows: still nothing drained
fm_get /v1/fabric | jq -r '.elements[] | "\(.name) \(.state) \(.class) \(.side): \(.evidence)"' \
    | while IFS= read -r l; do diag "$l"; done
is "$(fm_get /v1/fabric | jq '[.elements[] | select(.kind == "node" and (.state == "failed" or .state == "degraded"))] | length')" 0 \
    "no node is degraded or failed"
is "$(mc_exec ctl sinfo -h -R | wc -l)" 0 "no node is drained"
alarms=$(fm_get '/v1/actions?since=10m' | jq '[.actions[] | select(.kind == "alarm" and (.element | startswith("uplink:leaf1")))] | length')
[ "$alarms" -ge 1 ]
ok $? "an alarm for the uplink is recorded ($alarms)"
ctl explain "$(fm_get /v1/fabric | jq -r '.elements[] | select(.name | startswith("uplink:leaf1")) | .name' | head -1)" \
    >"$MC_TMP/explain.out" 2>&1
grep -q 'evidence: .*loss' "$MC_TMP/explain.out"
ok $? "fabricctl explain shows the uplink's evidence: $(grep evidence: "$MC_TMP/explain.out")"
ctl status | grep -q '^alarm .*uplink:leaf1'
ok $? "fabricctl status shows the alarm"
mc fault clear
mc_exec ctl scancel "$id"

# An administrator's drain: ours in form, theirs to resume.
out=$(ctl drain fmn2 --reason "bad cable")
is "$(mc_node_reason fmn2)" "fabric: manual: bad cable" "fabricctl drain: $out"
ctl drains | grep -q '^fmn2 *admin *fabric: manual: bad cable'
ok $? "fabricctl drains lists it as the administrator's"
sleep 10 # several healthy windows: fabricd leaves it alone
mc_node_state fmn2 | grep -q DRAIN
ok $? "fabricd does not resume a manual drain"
ctl resume fmn2 >/dev/null && ! mc_node_state fmn2 | grep -q DRAIN
ok $? "fabricctl resume fmn2 resumes it"
mc_exec ctl scontrol update nodename=fmn3 state=drain reason="admin: bad dimm"
out=$(ctl resume fmn3 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -q "not ours"
ok $? "resume of someone else's drain is refused: $out"
ctl resume fmn3 --force >/dev/null && ! mc_node_state fmn3 | grep -q DRAIN
ok $? "--force resumes it"
is "$(ctl actions --node fmn3 --json | jq -r '.actions[0] | "\(.kind) \(.result) \(.reason)"')" \
    "resume done administrator (forced)" "and the forced resume is recorded"
done_testing

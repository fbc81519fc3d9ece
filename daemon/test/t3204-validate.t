#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Validate-before-resume on a 5-node minicluster: loss on a node of a
# monitored job -> fabricd drains it. Healthy windows of that job, the fault
# cleared meanwhile, do not resume it. Once no job observes it, fabricd holds
# it in a reservation with idle healthy peers and runs a validation job
# (monitored, fabric-check against the peers). With the fault still present
# the validation fails and the node stays drained, and `fabricctl explain`
# says why. With the fault cleared the next validation passes (fabric-check
# too) and fabricd resumes the node.
FM_TOP_SRCDIR=${FM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FM_BUILDDIR=${FM_BUILDDIR:-${FM_TOP_BUILDDIR:-}}
export FM_BUILDDIR FM_SRCDIR=$FM_TOP_SRCDIR
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
[ -x "$FM_BUILDDIR/agent/fabric-check" ] \
    || plan_skip_all "fabric-check not built (configure found no PMIx)"
plan 22

conf=$(mktemp)
trap 'rm -f "$conf"' RETURN
cat >"$conf" <<'EOF'
report_window = 2s
persist_windows = 2
recover_windows = 3
resume_windows = 3
validate_backoff = 20s
EOF
mc_up --nodes 5 --fabricd-conf "$conf"
ok $? "minicluster up with 5 nodes" || exit 1
rm -f "$conf"
is "$(fm_get /v1/fabric | jq -c '.policy | [.auto_resume, .auto_validate]')" "[true,true]" \
    "GET /v1/fabric: auto_resume and auto_validate as configured"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$FM_SRCDIR/tests/system/pmix-lsan.supp"

ctl () { mc_exec ctl "$FM_BUILDDIR/cli/fabricctl" -u "$FM_DAEMON_URL" -m "$FM_MUNGE_SOCKET" "$@"; }
ctl policy | grep -Eq '^auto_validate: +yes$'
ok $? "fabricctl policy shows auto_validate"
# validate records of NODE with RESULT, oldest first, as JSON lines
validations () {
    fm_get "/v1/actions?node=$1" \
        | jq -c --arg r "$2" '[.actions[] | select(.kind == "validate" and .result == $r)] | sort_by(.at_ns) | .[]'
}
has_validation () { [ -n "$(validations "$1" "$2")" ]; }
fabric_reason () { case $(mc_node_reason "$1") in fabric:*) return 0 ;; esac; return 1; }
no_reservation () { ! mc_exec ctl scontrol -o show reservation 2>/dev/null | grep -q "fm-validate-$1"; }
# resume records of NODE, counted
resumes () { fm_get "/v1/actions?node=$1" | jq '[.actions[] | select(.kind == "resume")] | length'; }
bad=fmn2

id=$(mc_sbatch -N3 -w fmn[1-3] -o obs-%j.out --fabric-monitor --wrap 'sleep 50')
mc_wait_job "$id" RUNNING 30
fm_wait_agents "$id" 3 30
sleep 6 # clean windows first
mc fault add "$bad" loss 3
mc_wait_until 30 fabric_reason "$bad"
ok $? "$bad drained with a fabric: reason: $(mc_node_reason "$bad")"
# The job that saw the fault runs on; with the fault gone its windows turn
# healthy (recover_windows + resume_windows = 6 windows, 12 s), and a loss this
# low also leaves whole windows without a lost probe: neither resumes the node,
# only a validation does.
mc fault clear
sleep 18
is "$(resumes "$bad")" 0 "healthy windows of the job that saw the fault do not resume $bad"
mc_node_state "$bad" | grep -q DRAIN
ok $? "it stays drained while that job runs ($(mc_node_state "$bad"))"
mc fault add "$bad" loss 3
mc_wait_job "$id" COMPLETED 60
ok $? "the monitored job completes"

# The fault is still there: the validation fails, the node stays drained.
mc_wait_until 150 has_validation "$bad" failed
ok $? "a validation with the fault present fails: $(validations "$bad" failed | head -1 | jq -r .reason)"
started=$(validations "$bad" started | head -1)
vjob=$(echo "$started" | jq -r .explain | sed -n 's/^validation job \([0-9]*\) .*/\1/p')
[ -n "$vjob" ]
ok $? "it ran validation job $vjob: $(echo "$started" | jq -r .explain)"
mc_wait_until 20 fabric_reason "$bad"
ok $? "$bad is drained again: $(mc_node_reason "$bad")"
mc_node_state "$bad" | grep -q DRAIN
ok $? "and its state is drained ($(mc_node_state "$bad"))"
case $(mc_node_reason "$bad") in
    *validation*) ok 0 "the reason names the validation" ;;
    *) ok 1 "the reason names the validation ($(mc_node_reason "$bad"))" ;;
esac
ctl explain "$bad" >"$MC_TMP/explain.out" 2>&1
grep -qi 'validat.*fail' "$MC_TMP/explain.out"
ok $? "fabricctl explain $bad says why: $(grep -i 'validat.*fail' "$MC_TMP/explain.out" | head -1)"
mc_wait_until 20 no_reservation "$bad"
ok $? "the validation's reservation is gone"
has_validation "$bad" passed
ok "$([ $? -ne 0 ]; echo $?)" "no validation passed while the fault was present"

# Cleared: the next validation (after validate_backoff) passes.
mc fault clear
t_clear=$(date +%s)
mc_wait_until 150 has_validation "$bad" passed
ok $? "after the fault is cleared a validation passes ($(($(date +%s) - t_clear)) s): $(validations "$bad" passed | tail -1 | jq -r .reason)"
validations "$bad" passed | tail -1 | jq -r .reason | grep -q 'fabric-check passed'
ok $? "fabric-check is part of it"
pjob=$(validations "$bad" started | tail -1 | jq -r .explain | sed -n 's/^validation job \([0-9]*\) .*/\1/p')
checks=$(fm_get "/v1/checks?job=$pjob")
is "$(echo "$checks" | jq -r --arg n "$bad" '[.checks[0].nodes[] | select(.name == $n) | .passed] | .[0]')" true \
    "fabricd holds validation job $pjob's fabric-check result, $bad passed"
is "$(echo "$checks" | jq '.checks[0].nodes | length')" 3 "the check ran on $bad and two peers"
undrained () { ! mc_node_state "$1" | grep -q DRAIN; }
mc_wait_until 20 undrained "$bad"
ok $? "$bad is resumed ($(mc_node_state "$bad"))"
is "$(mc_node_reason "$bad")" "" "with no reason left"
mc_wait_until 20 no_reservation "$bad"
ok $? "and no reservation"
done_testing

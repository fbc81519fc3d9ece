#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The fabric loop end to end on a 6-node minicluster: a 4-node protect job
# that checkpoints; loss on one of its nodes -> fabricd drains that node with a
# fabric: reason, sends the checkpoint notice, requeues the job after the
# grace; the job restarts on healthy nodes, resumes from its checkpoint and
# completes, and its summary lists the actions. The fault cleared, fabricd
# validates the node with a short job and resumes it. A node drained by hand
# with another reason is never resumed.
FM_TOP_SRCDIR=${FM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FM_BUILDDIR=${FM_BUILDDIR:-${FM_TOP_BUILDDIR:-}}
export FM_BUILDDIR FM_SRCDIR=$FM_TOP_SRCDIR
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 18

conf=$(mktemp)
trap 'rm -f "$conf"' RETURN
cat >"$conf" <<'EOF'
report_window = 2s
persist_windows = 2
recover_windows = 3
resume_windows = 3
protect_grace = 10s
validate_backoff = 20s
EOF
mc_up --nodes 6 --fabricd-conf "$conf"
ok $? "minicluster up with 6 nodes" || exit 1
rm -f "$conf"


mc_exec ctl scontrol update nodename=fmn6 state=drain reason="admin: bad dimm"

# The job: a counter it checkpoints on the notice and resumes from.
cat >"$MC_HOME/ckpt.sh" <<'EOF'
#!/bin/bash
ck=$PWD/ckpt.$SLURM_JOB_ID
step=0
if [ -s "$ck" ]; then
    step=$(cat "$ck")
    echo "resumed from step $step on $SLURM_JOB_NODELIST (restart ${SLURM_RESTART_COUNT:-0})"
else
    echo "started on $SLURM_JOB_NODELIST"
fi
trap 'echo "$step" >"$ck"; echo "checkpoint at step $step"' USR1
while [ "$step" -lt 160 ]; do
    sleep 0.25
    step=$((step + 1))
done
echo "done at step $step"
EOF
chmod +x "$MC_HOME/ckpt.sh"
id=$(mc_sbatch -N4 -x fmn6 --requeue --open-mode=append -o prot-%j.out \
    --fabric-monitor=protect ckpt.sh)
mc_wait_job "$id" RUNNING 30
fm_wait_agents "$id" 4 30
is "$(fm_get "/v1/jobs/$id" | jq -r .mode)" protect "job $id runs in protect mode with 4 agents"
nodes=$(mc_exec ctl scontrol show hostnames "$(mc_job_field "$id" NodeList)" | tr '\n' ' ')
batch=$(mc_job_field "$id" BatchHost)
for n in $nodes; do
    [ "$n" != "$batch" ] && bad=$n
done
sleep 6 # a few clean windows first

t_fault=$(date +%s)
mc fault add "$bad" loss 3
has_reason () { [ -n "$(mc_node_reason "$1")" ]; }
mc_wait_until 30 has_reason "$bad"
reason=$(mc_node_reason "$bad")
t_drain=$(date +%s)
case $reason in
    fabric:*) ok 0 "$bad drained $((t_drain - t_fault)) s after 3% loss: $reason" ;;
    *) ok 1 "$bad drained with a fabric: reason within 30 s (reason: '$reason')" ;;
esac
[ $((t_drain - t_fault)) -le 30 ]
ok $? "within 30 s"

mc_wait_until 20 grep -q '^checkpoint at step' "$MC_HOME/prot-$id.out"
ok $? "the job got its checkpoint notice: $(grep '^checkpoint' "$MC_HOME/prot-$id.out" | head -1)"
mc_wait_until 40 grep -q '^resumed from step' "$MC_HOME/prot-$id.out"
ok $? "requeued by fabricd and restarted: $(grep '^resumed' "$MC_HOME/prot-$id.out")"
# validation starts once the job is done and peers are idle: the fault is
# gone by then
mc fault clear
ck=$(grep '^checkpoint at step' "$MC_HOME/prot-$id.out" | tail -1 | awk '{print $4}')
grep -q "^resumed from step $ck " "$MC_HOME/prot-$id.out"
ok $? "it resumed from its checkpoint (step $ck)"
restart_nodes=$(grep '^resumed' "$MC_HOME/prot-$id.out" | awk '{print $6}')
! mc_exec ctl scontrol show hostnames "$restart_nodes" | grep -qx "$bad"
ok $? "the restart runs on healthy nodes ($restart_nodes, not $bad)"
mc_wait_job "$id" COMPLETED 90
ok $? "the job completes"
grep -q '^done at step 160' "$MC_HOME/prot-$id.out"
ok $? "the job's work is done"

# The restart keeps the job id, so fabricd holds the first run's
# registrations: an agent that took a peer's old address from them must
# still end up probing it (each ordered pair, reported by its sender).
restarted=$(date -d "$(mc_job_field "$id" StartTime)" +%s)
rnodes=$(mc_exec ctl scontrol show hostnames "$restart_nodes" | jq -R . | jq -sc .)
nr=$(echo "$rnodes" | jq length)
probed=$(fm_get "/v1/links?since=$(($(date +%s) - restarted))s" | jq --argjson n "$rnodes" \
    '[.links[] | select(.reporter == .src and (.src as $s | $n | index($s))
        and (.dst as $d | $n | index($d)) and .received > 0)] | length')
is "$probed" $((nr * (nr - 1))) "after the restart every ordered pair of its $nr nodes was probed and answered"

summary=$(fm_get "/v1/jobs/$id/summary")
kinds=$(echo "$summary" | jq -r '[.actions[] | select(.result == "done") | .kind] | unique | join(",")')
is "$kinds" "drain,requeue,signal" "the job's summary lists the drain, the notice and the requeue"
grep -q "action.* drain $bad" "$MC_HOME/prot-$id.out"
ok $? "the summary in the job's output lists them: $(grep 'fabric-monitor: action' "$MC_HOME/prot-$id.out" | head -3 | tr '\n' '|')"

# Cleared: a validation job with healthy peers, then the node is back. No
# validation starts while the requeued job waits for nodes.
val_passed () {
    [ "$(fm_get "/v1/actions?node=$bad" | jq '[.actions[] | select(.kind == "validate" and .result == "passed")] | length')" -ge 1 ]
}
undrained () { ! mc_node_state "$1" | grep -q DRAIN; }
mc_wait_until 150 val_passed
ok $? "after the fault is cleared the validation passes: $(fm_get "/v1/actions?node=$bad" | jq -r '[.actions[] | select(.kind == "validate")] | map(.result + ": " + .reason) | join(" | ")')"
mc_wait_until 20 undrained "$bad"
ok $? "fabricd resumed $bad ($(mc_node_state "$bad"))"
first=$(fm_get "/v1/actions?node=$bad" | jq -r '[.actions[] | select(.kind == "validate" and .result == "started")] | sort_by(.at_ns) | .[0].at_ns / 1e9 | floor')
[ "${first:-0}" -ge "$restarted" ] 2>/dev/null
ok $? "the first validation started after the requeued job restarted (at $(date -d "@${first:-0}" +%T), the job at $(date -d "@$restarted" +%T))"

is "$(mc_node_reason fmn6)" "admin: bad dimm" "fmn6, drained by hand, keeps its reason"
mc_node_state fmn6 | grep -q DRAIN
ok $? "and stays drained"
done_testing

# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
# shellcheck shell=bash
#
# Helpers for the system tests, sourced after tests/tap.sh.  Each test file
# runs its own minicluster in its own run directory, so test files can even run
# side by side (their namespaces and addresses are private) -- except one that
# sets MC_EXCLUSIVE=1 before mc_require (a 64-node cluster loads a 2-core
# machine enough to time out another cluster's Slurm RPCs): it waits for the
# others and they for it (flock on /var/tmp/fm-systest.lock).
#
#   mc_require              skip the whole file unless root and FM_SYSTEM_TESTS=1
#   mc_up [UP-ARGS]         boot a cluster; from then on EXIT tears it down, and
#                           a failure (or any failed test point) first copies the
#                           logs of every daemon into the test log
#   mc ARGS                 run minicluster on this file's cluster
#   mc_exec MEMBER CMD...   run CMD in ctl, a node or a switch
#   mc_sbatch ARGS          submit from the shared directory; prints the job id
#   mc_job_state JOBID      the job's state (RUNNING, COMPLETED, ...)
#   mc_wait_job JOBID STATES SECONDS
#                           wait until the state is one of STATES ("A|B")
#   mc_ping_loss FROM TO COUNT INTERVAL
#                           packet loss percentage of COUNT pings
#   mc_now                  seconds since the epoch with decimals

: "${FM_BUILDDIR:?FM_BUILDDIR must name the build tree}"
FM_SRCDIR=${FM_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
MC=$FM_SRCDIR/contrib/minicluster/minicluster
MC_RUNDIR=/var/tmp/fm-systest-$(basename "$0" .t)-$$
MC_HOME=$MC_RUNDIR/home
MC_TMP=
mc_started=

mc_require () {
    [ "$(id -u)" = 0 ] || plan_skip_all "system tests run as root"
    [ "${FM_SYSTEM_TESTS:-}" = 1 ] || plan_skip_all "set FM_SYSTEM_TESTS=1 to run system tests"
    local t
    for t in slurmctld slurmd munged nft iptables-legacy tc ping perl; do
        command -v "$t" >/dev/null 2>&1 || plan_skip_all "$t is not installed"
    done
    # held until this shell exits: shared, or alone with MC_EXCLUSIVE
    exec {MC_LOCK_FD}>>/var/tmp/fm-systest.lock
    flock "$([ -n "${MC_EXCLUSIVE:-}" ] && echo -x || echo -s)" -w 1800 "$MC_LOCK_FD" \
        || plan_skip_all "another system test held /var/tmp/fm-systest.lock for 30 min"
    MC_TMP=$(mktemp -d /var/tmp/fm-systest-tmp.XXXXXX)
    trap mc_cleanup EXIT
}

mc () {
    "$MC" --rundir "$MC_RUNDIR" --build "$FM_BUILDDIR" -q "$@"
}

mc_now () {
    date +%s.%N
}

# Print "$2 - $1" with one decimal.
mc_elapsed () {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'
}

mc_logs () {
    local f
    diag "---- minicluster logs ($MC_RUNDIR) ----"
    [ -d "$MC_RUNDIR" ] || { diag "(no run directory)"; return 0; }
    "$MC" --rundir "$MC_RUNDIR" status 2>&1 | while IFS= read -r l; do diag "$l"; done
    for f in "$MC_RUNDIR"/log/* "$MC_HOME"/*.out; do
        [ -f "$f" ] || continue
        diag "==== $f (last 40 lines)"
        tail -n 40 "$f" | while IFS= read -r l; do diag "$l"; done
    done
}

mc_cleanup () {
    local rc=$?
    trap - EXIT
    if [ -n "$mc_started" ]; then
        if [ "$rc" -ne 0 ] || [ "${tap_failed:-0}" -gt 0 ]; then
            mc_logs
        fi
        "$MC" --rundir "$MC_RUNDIR" -q down || rc=1
    fi
    [ -z "$MC_TMP" ] || rm -rf "$MC_TMP"
    exit "$rc"
}

mc_up () {
    local t0 out
    t0=$(mc_now)
    mc_started=1
    if ! out=$(mc up "$@" 2>&1); then
        diag "minicluster up $* failed:"
        diag "$out"
        return 1
    fi
    diag "minicluster up $* took $(mc_elapsed "$t0" "$(mc_now)") s"
    # shellcheck source=/dev/null
    . "$MC_RUNDIR/env"
}

mc_down () {
    mc down
    local rc=$?
    mc_started=
    return $rc
}

mc_exec () {
    mc exec "$@"
}

mc_sbatch () {
    (cd "$MC_HOME" && mc exec ctl sbatch --parsable "$@") | cut -d';' -f1
}

mc_job_state () {
    mc exec ctl scontrol -o show job "$1" 2>/dev/null \
        | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

mc_wait_job () {
    local id=$1 states=$2 limit=$3 t0 st
    t0=$(date +%s)
    while :; do
        st=$(mc_job_state "$id")
        case "|$states|" in
            *"|$st|"*) return 0 ;;
        esac
        if [ $(( $(date +%s) - t0 )) -ge "$limit" ]; then
            diag "job $id is '$st' after ${limit}s, wanted $states"
            return 1
        fi
        sleep 0.2
    done
}

mc_ping_loss () {
    local from=$1 to=$2 count=$3 interval=$4
    mc exec "$from" ping -q -n -c "$count" -i "$interval" -W 1 "$to" 2>/dev/null \
        | sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p'
}

# Median RTT in ms of COUNT pings ("" when none came back). The median, not
# the mean: on a loaded machine one reply held up by a descheduled fm-delayq
# or ping moves the mean by milliseconds.
mc_ping_rtt () {
    local from=$1 to=$2 count=$3 interval=$4
    mc exec "$from" ping -n -c "$count" -i "$interval" -W 1 "$to" 2>/dev/null \
        | sed -n 's/.* time=\([0-9.]*\) ms$/\1/p' | median
}

# True when X (a decimal) lies within [LO, HI].
mc_within () {
    awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x >= lo && x <= hi) }'
}

# Until CMD... succeeds, for at most SECONDS (polls every 0.5 s).
mc_wait_until () {
    local limit=$1 t0
    shift
    t0=$(date +%s)
    until "$@"; do
        [ $(($(date +%s) - t0)) -lt "$limit" ] || return 1
        sleep 0.5
    done
}

# A node's drain reason as Slurm shows it ("" when none), and its state.
mc_node_reason () {
    mc exec ctl sinfo -h -R -n "$1" -o '%E'
}
mc_node_state () {
    mc exec ctl scontrol -o show node "$1" | sed -n 's/.* State=\([^ ]*\).*/\1/p'
}

# FIELD of job ID as scontrol shows it.
mc_job_field () {
    mc exec ctl scontrol -o show job "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"
}

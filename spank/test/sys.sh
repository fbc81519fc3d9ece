# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Shared by the plugin's system tests (spank/test/t05*.t): sources tests/tap.sh
# and tests/system/lib.sh, and adds
#   fm_get PATH             GET a fabricd path as root (munge credential), JSON out
#   fm_summary_ok FILE      the last lines of FILE are a fabric summary
#   fm_no_agents JOBID      no agent state left on any node for JOBID
#   fm_wait_agents JOBID N SECONDS  until fabricd has N agents of JOBID
. "$FM_SRCDIR/tests/tap.sh"
. "$FM_SRCDIR/tests/system/lib.sh"

fm_get () {
    local path=$1 cred
    cred=$(printf 'fm1 GET %s %s' "$path" \
        e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 \
        | munge --socket="$FM_MUNGE_SOCKET") || return 1
    mc_exec ctl curl -s -H "Authorization: Munge $cred" "$FM_DAEMON_URL$path"
}

fm_summary_ok () {
    # the summary is the last thing in the file: header, column line, links
    awk '/^fabric-monitor: network summary of job / { h = NR } END { exit !(h > 0) }' "$1" \
        && [ "$(tail -n 1 "$1" | cut -c1-16)" = "fabric-monitor: " ]
}

fm_no_agents () {
    local id=$1 n
    for n in $FM_NODES; do
        [ ! -e "$FM_RUNDIR/agent/$n/job.$id" ] || return 1
    done
}

fm_agents_registered () {
    [ "$(fm_get "/v1/jobs/$1" | jq '.agents | length' 2>/dev/null)" = "$2" ]
}

fm_wait_agents () {
    mc_wait_until "$3" fm_agents_registered "$1" "$2"
}

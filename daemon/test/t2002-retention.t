#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Retention: fabricd prunes windows older than `retention` every `prune_interval`.
. "$(dirname "$0")/lib.sh"
fm_setup
fm_munged_start || exit 1
FD_CONF_EXTRA='retention = 1m
prune_interval = 1s'
fm_fabricd_start || exit 1
plan 4

J=66
fm_register_body $J p1 0 9001 >"$T/reg"
is "$(fm_post /v1/agents "$T/reg" | fm_code)" 201 "register"
old=$(fm_window 0 p2 0)
end=$(echo "$old" | sed 's/.*"end_ns":\([0-9]*\).*/\1/')
start=$(echo "$old" | sed 's/.*"start_ns":\([0-9]*\).*/\1/')
old=$(echo "$old" | sed -e "s/\"end_ns\":$end/\"end_ns\":$((end - 7200000000000))/" \
    -e "s/\"start_ns\":$start/\"start_ns\":$((start - 7200000000000))/")
fm_report $J p1 "$old" "$(fm_window 1 p2 0)" >"$T/r"
is "$(fm_post /v1/reports "$T/r" | fm_body | jq -c .accepted)" 2 \
    "a window from two hours ago and a current one are stored"
sleep 2.5
is "$(fm_get /v1/jobs/$J | fm_body | jq -c '[.agents[0].windows, .agents[0].last_seq]')" \
    "[1,1]" "the old window was pruned, the current one kept"
fm_fabricd_kill TERM
is "$FD_RC" 0 "fabricd exits 0"
done_testing

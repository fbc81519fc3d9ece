#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# 24 real fabric-agents on 127.0.0.1 (a job over the 17 nodes where every pair
# is probed) against a real fabricd with a leafspine topology.conf: each agent
# probes the targets of fabricd's probe plan and answers its probers, the plan
# rotates (3 s epochs here) and the agents follow it, the rendezvous answers
# stay O(k), and no link row claims loss that did not happen (a pair only one
# side probes is reported by the prober, both directions, from its own
# requests and the replies).
. "$FM_SRCDIR/tests/tap.sh"
. "$FM_SRCDIR/agent/test/loopback.sh"

N=24
JOB=88

# three leaves of eight under one spine
cat >"$T/topology.conf" <<EOT
SwitchName=leaf1 Nodes=n[1-8]
SwitchName=leaf2 Nodes=n[9-16]
SwitchName=leaf3 Nodes=n[17-24]
SwitchName=spine Switches=leaf[1-3]
EOT
PORT=$(free_port SOCK_STREAM)
URL=http://127.0.0.1:$PORT
cat >"$T/fabricd.conf" <<EOT
listen_address = 127.0.0.1
listen_port = $PORT
state_dir = "$T/fabricd"
munge_socket = "$SOCK"
report_window = 1s
topology = "$T/topology.conf"
actions = none
plan_epoch = 3s
EOT

get () {
    local auth
    auth=$(printf 'fm1 GET %s %s' "$1" "$(printf '' | sha256sum | cut -d' ' -f1)" \
        | munge --socket="$SOCK")
    curl -s -H "Authorization: Munge $auth" "$URL$1"
}

plan 9

"$FABRICD" -c "$T/fabricd.conf" >>"$T/fabricd.log" 2>&1 &
fd_pid=$!
pids="$pids $fd_pid"
up=1
for _ in $(seq 100); do
    curl -sf -o /dev/null "$URL/v1/status" && { up=0; break; }
    sleep 0.1
done
ok $up "fabricd answers on $URL"

apids=
for i in $(seq $N); do
    "$AGENT" --daemon "$URL" --job $JOB --node "n$i" --nodes "n[1-$N]" --uid 0 \
        --munge-socket "$SOCK" --statedir "$T/n$i" --bind 127.0.0.1 \
        --port "$(free_port SOCK_DGRAM)" --rate 10 >>"$T/n$i.log" 2>&1 &
    apids="$apids $!"
    pids="$pids $!"
done
registered=0
for _ in $(seq 100); do
    registered=$(get /v1/jobs/$JOB | jq '.agents | length' 2>/dev/null || echo 0)
    [ "$registered" = $N ] && break
    sleep 0.1
done
is "$registered" $N "all $N agents registered"
sleep 7

# each agent's answer: its plan (at most 10 targets), the nodes that probe it
max_bytes=0 max_probers=0 bad=0
for i in $(seq $N); do
    get "/v1/jobs/$JOB/peers?node=n$i" >"$T/peers.n$i"
    b=$(wc -c <"$T/peers.n$i")
    [ "$b" -gt "$max_bytes" ] && max_bytes=$b
    p=$(jq '.probers | length' "$T/peers.n$i")
    [ "$p" -gt "$max_probers" ] && max_probers=$p
    jq -e '(.targets | length) <= 10 and (.peers | length) >= (.targets | length)' \
        "$T/peers.n$i" >/dev/null || bad=$((bad + 1))
done
is "$bad" 0 "every answer: at most 10 targets, all with their addresses"
diag "largest answer $max_bytes bytes, most probers $max_probers (n1, the clock root)"
ok "$([ "$max_bytes" -lt 6000 ]; echo $?)" "answers stay O(k): at most $max_bytes bytes"
n_probing=$(grep -l "probing 10 of 23 nodes" "$T"/n*.log | wc -l)
is "$n_probing" $N "every agent probes 10 of the 23 others"
! grep -q "probe plan:" "$T/fabricd.log"
ok $? "the plan covers the topology (no probe plan warning)"

for p in $apids; do kill -TERM "$p"; done
for p in $apids; do wait "$p"; done
pids=$(echo "$pids" | tr ' ' '\n' | grep -vxF -f <(echo "$apids" | tr ' ' '\n') | tr '\n' ' ')

# the job's links: every target of every plan, no loss on loopback
get "/v1/jobs/$JOB/summary?worst=10000" >"$T/summary.json"
nlinks=$(jq .nlinks "$T/summary.json")
ntargets=$(cat "$T"/peers.n* | jq -s 'map(.targets | length) | add')
ok "$([ "$nlinks" -ge "$ntargets" ]; echo $?)" \
    "fabricd holds a link per planned pair and direction ($nlinks links, $ntargets targets)"
# two rotating targets a node move on every epoch: more pairs than one epoch's
ok "$([ "$nlinks" -ge $((2 * ntargets + N)) ]; echo $?)" \
    "the agents followed the plan's epochs ($nlinks links, one epoch has $((2 * ntargets)))"
lossy=$(jq '[.links[] | select(.sent > 0 and .lost * 20 > .sent)] | length' "$T/summary.json")
is "$lossy" 0 "no link claims loss on loopback (one-sided pairs reported right)"
[ "$lossy" = 0 ] || diag "$(jq -c '[.links[] | select(.lost * 20 > .sent)][:5]' "$T/summary.json")"

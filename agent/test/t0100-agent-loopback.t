#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Two real fabric-agents on 127.0.0.1 against a real fabricd and munged:
# registration, probing, window reports, spooling while fabricd is down and
# in-order resend, SIGTERM flush, the summary, and rate-limited logging of
# garbage datagrams.
. "$FM_SRCDIR/tests/tap.sh"
. "$FM_SRCDIR/agent/test/loopback.sh"

PORT=$(free_port SOCK_STREAM)
URL=http://127.0.0.1:$PORT
cat >"$T/fabricd.conf" <<EOT
listen_address = 127.0.0.1
listen_port = $PORT
state_dir = "$T/fabricd"
munge_socket = "$SOCK"
report_window = 1s
EOT

fd_pid=
fabricd_start () {
    "$FABRICD" -c "$T/fabricd.conf" >>"$T/fabricd.log" 2>&1 &
    fd_pid=$!
    pids="$pids $fd_pid"
    for _ in $(seq 100); do
        curl -sf -o /dev/null "$URL/v1/status" && return 0
        sleep 0.1
    done
    return 1
}
fabricd_stop () {
    kill "$fd_pid"; wait "$fd_pid" 2>/dev/null
}
status_field () {
    curl -sf "$URL/v1/status" | jq -r "$1"
}
# get PATH: an authenticated GET
get () {
    local auth
    auth=$(printf 'fm1 GET %s %s' "$1" "$(printf '' | sha256sum | cut -d' ' -f1)" \
        | munge --socket="$SOCK")
    curl -s -H "Authorization: Munge $auth" "$URL$1"
}
# agent NAME PORT [ARGS...]: start one agent of job $JOB (77) on n[1-2]; pid in $apid
agent () {
    local name=$1 port=$2
    shift 2
    "$AGENT" --daemon "$URL" --job "${JOB:-77}" --node "$name" --nodes 'n[1-2]' --uid 0 \
        --munge-socket "$SOCK" --statedir "$T/$name" --bind 127.0.0.1 --port "$port" \
        --rate 50 "$@" >>"$T/$name.log" 2>&1 &
    apid=$!
    pids="$pids $apid"
}
# stop PID: SIGTERM, wait at most 8 s; the exit status in $rc
stop () {
    kill -TERM "$1"
    for _ in $(seq 80); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$1" 2>/dev/null; then
        kill -KILL "$1"; wait "$1" 2>/dev/null; rc=killed
    else
        wait "$1"; rc=$?
    fi
    pids=$(echo "$pids" | sed "s/ $1\b//")
    if [ "$rc" != 0 ]; then
        # what a sanitizer said, for the log of this test
        grep -h -A25 -E 'Sanitizer|runtime error' "$T"/*.log 2>/dev/null | head -60 \
            | while IFS= read -r l; do diag "$l"; done
    fi
}

plan 30

fabricd_start
ok $? "fabricd answers on $URL"

p1=$(free_port SOCK_DGRAM); p2=$(free_port SOCK_DGRAM)
agent n1 "$p1"; a1=$apid
n2_started=$(date +%s%N)
agent n2 "$p2" --clock-offset 2000000 --clock-drift-ppb 20000 \
    --clock-page "$T/n2.page"; a2=$apid
sleep 4.5
# Job time on n2 from its page (libfmclock): its clock runs 2 ms ahead and
# 20 ppm fast, n1's is the reference, and n1 shares our host clock: job time
# is host time to within the published bound. Host time is read before and
# after, so a reader descheduled on a loaded machine widens the interval the
# check allows, never the bound's.
# a sanitizer build's library needs its runtime loaded first
lib=$FM_BUILDDIR/lib/.libs/libfmclock.so
preload=$(ldd "$lib" | awk '/lib(a|ub)san/ { printf "%s ", $3 }')
page=$(LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 python3 - "$lib" "$T/n2.page" <<'PY'
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.fm_clock_open.restype = ctypes.c_void_p
lib.fm_clock_now.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
class ts(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
c = lib.fm_clock_open(sys.argv[2].encode())
t, b = ts(), ctypes.c_uint64()
if not c:
    print("none"); sys.exit(0)
before = time.clock_gettime_ns(time.CLOCK_REALTIME)
if lib.fm_clock_now(c, ctypes.byref(t), ctypes.byref(b)) != 0:
    print("none"); sys.exit(0)
after = time.clock_gettime_ns(time.CLOCK_REALTIME)
job = t.s * 1000000000 + t.ns
print(job - before, after - job, b.value)
PY
)
diag "n2's page: job time - host before, host after - job time, bound: $page"
ok "$(echo "$page" | awk '{ exit !(NF == 3 && $3 > 0 && $3 < 100000 && $1 >= -$3 && $2 >= -$3) }'; echo $?)" \
    "libfmclock on n2 reads job time: between host time before and after, within its bound"

# garbage at n1's probe port: counted and logged once, not per datagram
python3 - "$p1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(50):
    s.sendto(b"garbage" * 16, ("127.0.0.1", int(sys.argv[1])))
PY
sleep 0.5
# n2 first: its last window still has n1's replies and a clock estimate
n2_stopping=$(date +%s%N)
stop "$a2"; is "$rc" 0 "agent n2 exits 0 on SIGTERM"
n2_stopped=$(date +%s%N)
stop "$a1"; is "$rc" 0 "agent n1 exits 0 on SIGTERM"

is "$(grep -c 'dropping probe datagrams' "$T/n1.log")" 1 \
    "50 garbage datagrams give one log line"
grep -q 'registered for job 77 as n1' "$T/n1.log"
ok $? "n1 registered"

windows=$(status_field .store.windows)
ok "$([ "${windows:-0}" -ge 8 ]; echo $?)" "fabricd stored the windows of both agents ($windows)"

"$AGENT" --summary --daemon "$URL" --job 77 --munge-socket "$SOCK" >"$T/summary" 2>&1
ok $? "fabric-agent --summary succeeds"
diag "$(cat "$T/summary")"
grep -q '^fabric-monitor: network summary of job 77' "$T/summary"
ok $? "summary header"
# --output appends only to a regular file of the caller's: not through a
# link, not to someone else's file it may write
: >"$T/out.mine"; : >"$T/out.theirs"; chown 65534 "$T/out.theirs"; chmod 666 "$T/out.theirs"
ln -s "$T/out.mine" "$T/out.link"
"$AGENT" --summary --daemon "$URL" --job 77 --munge-socket "$SOCK" --output "$T/out.mine" \
    >"$T/out.log" 2>&1
ok "$(grep -q '^fabric-monitor: network summary of job 77' "$T/out.mine"; echo $?)" \
    "--output appends the summary to the caller's own file"
"$AGENT" --summary --daemon "$URL" --job 77 --munge-socket "$SOCK" --output "$T/out.theirs" \
    >"$T/out.log" 2>&1
rc=$?
ok "$([ $rc -ne 0 ] && [ ! -s "$T/out.theirs" ] \
    && grep -q 'owned by uid 65534, not by uid' "$T/out.log"; echo $?)" \
    "--output refuses a file another uid owns, even a writable one (rc $rc)"
"$AGENT" --summary --daemon "$URL" --job 77 --munge-socket "$SOCK" --output "$T/out.link" \
    >"$T/out.log" 2>&1
rc=$?
ok "$([ $rc -ne 0 ] && [ "$(grep -c 'network summary' "$T/out.mine")" -eq 1 ]; echo $?)" \
    "--output does not follow a symlink (rc $rc)"

# 2 directed links, each reported by its sender (out) and its receiver (in)
is "$(grep -cE '^fabric-monitor: n[12] -> n[12] ' "$T/summary")" 4 "summary lists 4 link records"
# Only the probes a node sends before its peer has heard of it (one peer
# poll, milliseconds) may go unanswered.
lost=$(awk '/^fabric-monitor: n[12] -> n[12] / { l += $7; s += $6 } END { print l + 0, s + 0 }' "$T/summary")
ok "$(echo "$lost" | awk '{ exit !($2 >= 300 && $1 <= 3) }'; echo $?)" \
    "at most 3 probes lost on loopback (lost, sent: $lost)"

# n2 ran 2 ms ahead: its reported clock offset says so, within the error bound,
# and so does its drift
auth=$(printf 'fm1 GET /v1/nodes %s' "$(printf '' | sha256sum | cut -d' ' -f1)" \
    | munge --socket="$SOCK")
nodes=$(curl -s -H "Authorization: Munge $auth" "$URL/v1/nodes")
off=$(echo "$nodes" | jq '.nodes[] | select(.node == "n2") | .clock_offset_ns')
err=$(echo "$nodes" | jq '.nodes[] | select(.node == "n2") | .clock_error_ns')
# 2 ms plus 20 ppm of the time from its start to its last window, which it
# closed on SIGTERM (about 5 s here, more on a loaded machine), +- 10 us
lo=$((2000000 + (n2_stopping - n2_started) / 50000 - 10000))
hi=$((2000000 + (n2_stopped - n2_started) / 50000 + 10000))
diag "n2 clock offset ${off} ns +- ${err} ns (true: $lo-$hi)"
ok "$(awk -v o="$off" -v e="$err" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(o ~ /^-?[0-9]+$/ && e ~ /^[0-9]+$/ && e + 0 > 0 && o >= lo - e && o <= hi + e) }'; echo $?)" \
    "n2's clock offset is 2 ms plus its drift, within its error bound"
drift=$(echo "$nodes" | jq '.nodes[] | select(.node == "n2") | .clock_drift_ppb')
diag "n2 clock drift ${drift} ppb (true: the virtual clock's 20000 ppb at the end)"
ok "$(awk -v d="$drift" 'BEGIN { exit !(d ~ /^-?[0-9.e+]+$/ && d - 20000 < 2000 && 20000 - d < 2000) }'; echo $?)" \
    "n2's clock drift is 20 ppm within 2"
[ ! -e "$T/n2.page" ]
ok $? "the page is gone with its agent"

# fabricd goes down after registration: windows spool on disk, and go out
# in order once it is back
agent n1 "$p1"; a1=$apid
for _ in $(seq 50); do
    [ "$(grep -c 'registered for job 77' "$T/n1.log")" -ge 2 ] && break
    sleep 0.1
done
windows=$(status_field .store.windows)
fabricd_stop
sleep 3.5
n=$(ls "$T/n1/spool" 2>/dev/null | grep -c '\.json$')
ok "$([ "$n" -ge 2 ]; echo $?)" "windows spool while fabricd is down ($n files)"
fabricd_start
for _ in $(seq 60); do
    [ "$(ls "$T/n1/spool" | grep -c '\.json$')" -eq 0 ] && break
    sleep 0.2
done
is "$(ls "$T/n1/spool" | grep -c '\.json$')" 0 "the spool drains once fabricd is back"
after=$(status_field .store.windows)
ok "$([ "$after" -ge $((windows + n)) ]; echo $?)" "the spooled windows were stored ($windows -> $after)"
stop "$a1"; is "$rc" 0 "agent exits 0"

# The summary race: the agents stop while the summary is fetched. With --wait
# it waits for the last window of each (final: true), and only then reads.
agent n1 "$p1"; a1=$apid
agent n2 "$p2" --mode protect; a2=$apid
sleep 2.5
is "$(get /v1/jobs/77 | jq -c '[.agents[].final]')" "[false,false]" \
    "running agents are not final"
"$AGENT" --summary --daemon "$URL" --job 77 --munge-socket "$SOCK" --wait 0.6s \
    >"$T/early" 2>&1
grep -q '^fabric-monitor: 2 of 2 agents had not sent their last window after 0.6s' \
    "$T/early"
ok $? "a summary whose wait ran out says what it lacks"
kill -TERM "$a1" "$a2"
t0=$(date +%s%N)
"$AGENT" --summary --daemon "$URL" --job 77 --munge-socket "$SOCK" --wait 10s \
    >"$T/final" 2>&1
el=$(( ($(date +%s%N) - t0) / 1000000 ))
stop "$a1"; stop "$a2"
diag "$(head -n 1 "$T/final"), after ${el} ms"
job=$(get /v1/jobs/77)
is "$(echo "$job" | jq -c '[.agents[].final]')" "[true,true]" \
    "both agents sent their last batch as final"
is "$(sed -n 's/^fabric-monitor: network summary of job 77 (observe mode): \([0-9]*\) report windows.*/\1/p' "$T/final")" \
    "$(echo "$job" | jq '[.agents[].windows] | add')" \
    "the summary counts every stored window, the last ones included"
ok "$([ "$el" -lt 9000 ]; echo $?)" "it waited for the agents, not for the timeout (${el} ms)"
! grep -q 'had not sent' "$T/final"
ok $? "and has no note of missing windows"
is "$(echo "$job" | jq -r .mode)" observe "the job keeps the mode of its first registration"

# A crashed agent restarted on another port: its peer, which knew all its
# peers and stopped polling fabricd, hears from an unknown port, asks
# fabricd at once and answers. (The new n1's requests come from its own run:
# the killed one's windows are not all stored.)
JOB=78
agent n1 "$p1"; a1=$apid
agent n2 "$p2"; a2=$apid
sleep 3
kill -KILL "$a1"; wait "$a1" 2>/dev/null
pids=$(echo "$pids" | sed "s/ $a1\b//")
p3=$(free_port SOCK_DGRAM)
agent n1 "$p3"; a1=$apid
sleep 4
stop "$a1"; stop "$a2"
"$AGENT" --summary --daemon "$URL" --job 78 --munge-socket "$SOCK" >"$T/restart" 2>&1
diag "$(grep -E '^fabric-monitor: n[12] -> n[12] ' "$T/restart")"
# sent and lost of n1 -> n2 as n1 reports it
lost=$(awk '$2 == "n1" && $4 == "n2" && $5 == "n1" { print $7, $6 }' "$T/restart")
ok "$(echo "$lost" | awk '{ exit !(NF == 2 && $2 >= 100 && $1 <= 10) }'; echo $?)" \
    "n2 answers the restarted n1 at once (lost, sent: $lost)"
lost=$(awk '$2 == "n2" && $4 == "n1" && $5 == "n2" { print $7, $6 }' "$T/restart")
ok "$(echo "$lost" | awk '{ exit !(NF == 2 && $2 >= 200 && $1 <= 60) }'; echo $?)" \
    "and probes it at its new port (lost, sent: $lost)"

#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# fabricctl watch against a real fabricd and munged: frames redrawn with an
# ANSI clear, the daemon's window as the default interval, the fabric loop's
# unhealthy elements, the unhealthy nodes and the worst links, --count, a clean exit on SIGINT, and a daemon
# that goes away shown rather than fatal.
. "$(dirname "$0")/lib.sh"
fm_setup
fm_munged_start || exit 1
FD_CONF_EXTRA='report_window = 2s'
fm_fabricd_start || exit 1
plan 14

J=4002
NOBODY=$(id -u nobody)
CTL="$FABRICCTL --url $FD_URL --munge-socket $MUNGE_SOCKET"

for n in wn1 wn2 wn3; do
    fm_register_body $J $n "$NOBODY" 9200 'wn[1-3]' >"$T/reg"
    fm_post /v1/agents "$T/reg" >/dev/null
done
# wn1 -> wn2 loses 10 of 100; wn3's NIC is down.
fm_report $J wn1 "$(fm_window 0 wn2 10)" >"$T/r1"
fm_report $J wn2 "$(fm_window 0 wn1 0)" >"$T/r2"
fm_report $J wn3 "$(fm_window 0 wn1 0 | sed 's/"link_up":true/"link_up":false/')" >"$T/r3"
for r in r1 r2 r3; do
    fm_post /v1/reports "$T/$r" >/dev/null
done

# the fabric loop scores at the end of a window: let it see these first
t0=$(date +%s)
until $CTL --json policy 2>/dev/null | grep -q '"node:wn3"' \
    || [ $(($(date +%s) - t0)) -ge 15 ]; do
    sleep 0.2
done
start=$(date +%s%N)
$CTL watch --count 2 >"$T/out" 2>"$T/err"
rc=$?
elapsed=$((($(date +%s%N) - start) / 1000000))
is "$rc" 0 "watch --count 2 exits 0" || diag "$(cat "$T/err")"
is "$(grep -o $'\033\\[H\033\\[2J' "$T/out" | wc -l)" 2 "two frames, each after a clear screen"
grep -q "fabricctl watch  $FD_URL  every 2.00s  .*(2/2)$" "$T/out"
ok $? "the default interval is the daemon's window (2s)" || diag "$(head -3 "$T/out")"
[ "$elapsed" -ge 2000 ] && [ "$elapsed" -lt 8000 ]
ok $? "one interval between the frames (${elapsed} ms)"
last=$(awk '/\033\[H\033\[2J/ { n++ } n == 2' "$T/out")
echo "$last" | grep -q '^nodes 3  not healthy 2  '
ok $? "the frame counts the nodes and the unhealthy ones" || diag "$last"
echo "$last" | grep -Eq '^  wn1 +lossy +loss 5.00%$'
ok $? "a lossy node and its loss" || diag "$last"
echo "$last" | grep -Eq '^  wn3 +nic-down +eth0 link down$'
ok $? "a node whose NIC is down"
echo "$last" | sed -n '/^NODES NOT HEALTHY/,/^WORST LINKS/p' | grep -Eq '^  wn2 '
is "$?" 1 "a healthy node is not listed"
echo "$last" | grep -Eq '^  node:wn3 +[a-z]+ +down +'
ok $? "the fabric loop's verdict on wn3 (GET /v1/fabric)" || diag "$last"
echo "$last" | grep -A2 '^WORST LINKS' | tail -1 | grep -Eq '^  wn1 +wn2 +wn1 +10.00% '
ok $? "the worst link comes first" || diag "$last"

out=$($CTL watch --interval 0.1s --count 1 --worst 1)
is "$(echo "$out" | sed -n '/^WORST LINKS/,$p' | grep -c '^  wn')" 1 "--worst 1: one link row"

$CTL watch --interval 1s >"$T/out2" 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid
is "$?" 0 "SIGINT ends the view cleanly (exit 0)"

$CTL watch --count 0 >/dev/null 2>&1
is "$?" 2 "--count 0 is a usage error"

fm_fabricd_kill TERM
$CTL watch --count 1 >"$T/out3" 2>&1
grep -q "cannot reach fabricd at $FD_URL" "$T/out3"
ok $? "a daemon that is down is shown in the frame" || diag "$(cat "$T/out3")"
done_testing

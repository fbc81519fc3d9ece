#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Every fault kind measurably takes effect on its node and only there, in the
# direction asked for, and `fault clear` restores the link.
. "${srcdir:-.}/../tap.sh"
. "${srcdir:-.}/lib.sh"
mc_require
plan 42

mc_up --nodes 4
ok $? "up --nodes 4"
sdir=$(cd "${srcdir:-.}" && pwd)

# One-way delay FROM -> TO (all namespaces share one clock):
# "N MEDIAN_MS ROBUST_SD_MS MEAN_MS SD_MS".
owd () {
    local from=$1 to=$2 addr
    addr=$(mc_exec "$to" ip -4 -o addr show dev eth0 | awk '{ sub(/\/.*/, "", $4); print $4 }')
    mc_exec "$to" perl "$sdir/owd.pl" recv "$addr" 9100 200 >"$MC_TMP/owd" &
    local rpid=$!
    sleep 0.3
    mc_exec "$from" perl "$sdir/owd.pl" send "$addr" 9100 200 0.004
    wait $rpid
    cat "$MC_TMP/owd"
}

# Throughput FROM -> TO in kbit/s of a 250 kB TCP transfer.
kbit () {
    local from=$1 to=$2 addr
    addr=$(mc_exec "$to" ip -4 -o addr show dev eth0 | awk '{ sub(/\/.*/, "", $4); print $4 }')
    mc_exec "$to" perl "$sdir/sink.pl" "$addr" 9200 >"$MC_TMP/sink" &
    local rpid=$!
    sleep 0.3
    mc_exec "$from" bash -c "head -c 250000 /dev/zero >/dev/tcp/$addr/9200"
    wait $rpid
    awk '{ if ($2 > 0) printf "%d", $1 * 8 / 1000 / $2; else print 999999 }' "$MC_TMP/sink"
}

## loss
is "$(mc_ping_loss fmn1 fmn2 200 0.002)" 0 "no loss before any fault"
mc fault add fmn2 loss 10 --dir in
ok $? "fault add fmn2 loss 10 --dir in"
is "$(mc fault list)" "fmn2 loss 10 dir=in" "fault list shows it"
mc status | sed -n '/^faults:/,$p' | grep -q '^  fmn2 loss 10 dir=in$'
ok $? "status shows it too"
loss=$(mc_ping_loss fmn1 fmn2 1000 0.002)
mc_within "$loss" 6 14
ok $? "1000 pings to fmn2 lose 10% +- 4 (one direction): $loss%"
is "$(mc_ping_loss fmn1 fmn3 200 0.002)" 0 "fmn3 is not affected"
mc fault add fmn2 loss 5 >/dev/null 2>&1
ok $((! $?)) "a second loss fault on fmn2 is refused"
mc fault clear fmn2
is "$(mc_ping_loss fmn1 fmn2 200 0.002)" 0 "clear restores: no loss"
mc fault add fmn2 loss 10
loss=$(mc_ping_loss fmn1 fmn2 1000 0.002)
mc_within "$loss" 14 24.5
ok $? "loss 10 in both directions loses 19% +- 5 of round trips: $loss%"
mc fault clear
is "$(mc fault list)" "(none)" "fault list is empty after clear"

## delay (kernel-visible, one direction)
if [ ! -x "$FM_BUILDDIR/contrib/minicluster/fm-delayq" ]; then
    for i in $(seq 10); do
        skip "fm-delayq not built (configure found no libnetfilter_queue)"
    done
else
dq=$FM_BUILDDIR/contrib/minicluster/fm-delayq
bad=0
for args in "-q 1 -d -5" "-q 1 -d 99999999" "-d 100" "-q 70000 -d 100" "-q 1 -d 100 -j x" "-q 1 -d 100 -m 0"; do
    # shellcheck disable=SC2086
    timeout 5 "$dq" $args 2>/dev/null
    rc=$?
    [ $rc -eq 1 ] || { bad=1; diag "fm-delayq $args: exit $rc, want 1"; }
done
ok $bad "fm-delayq refuses bad arguments"
read -r n base _ <<<"$(owd fmn1 fmn2)"
mc_within "$base" 0 2
ok $? "one-way delay fmn1->fmn2 before: $base ms ($n samples)"
mc fault add fmn2 delay 5000 --dir in
ok $? "fault add fmn2 delay 5000 --dir in"
read -r n d _ <<<"$(owd fmn1 fmn2)"
mc_within "$d" 4.8 6.5
ok $? "traffic arriving at fmn2 is 5 ms late: $d ms ($n samples)"
read -r n d _ <<<"$(owd fmn2 fmn1)"
mc_within "$d" 0 2
ok $? "traffic leaving fmn2 is not delayed: $d ms"
# ping times replies with the kernel's receive timestamp (SO_TIMESTAMP), so
# this shows that the hold is visible to kernel timestamps on the nodes.
rtt=$(mc_ping_rtt fmn3 fmn2 20 0.02)
mc_within "$rtt" 4.8 7
ok $? "ping round trip fmn3<->fmn2 includes it: $rtt ms"
mc fault clear fmn2
mc fault add fmn2 delay 5000,1000 --dir out
read -r n d sd _ <<<"$(owd fmn2 fmn1)"
mc_within "$d" 4.6 6.5 && mc_within "$sd" 0.6 1.6
ok $? "delay 5000,1000 --dir out: median $d ms, jitter sd $sd ms"
read -r n d _ <<<"$(owd fmn1 fmn2)"
mc_within "$d" 0 2
ok $? "and traffic arriving at fmn2 is not delayed: $d ms"
mc fault clear fmn2
# N(100, 100) holds 15.9% for 0: those pass in the kernel, as through an idle
# queue, instead of waking fm-delayq
mc fault add fmn2 delay 100,100 --dir out
chain=$(mc_exec sw iptables-legacy -S FORWARD | awk '/-j FMD_/ { print $NF; exit }')
owd fmn2 fmn1 >/dev/null
owd fmn2 fmn1 >/dev/null
read -r pass held <<<"$(mc_exec sw iptables-legacy -L "$chain" -v -x -n \
    | awk '$3 == "ACCEPT" { a += $1 } $3 == "NFQUEUE" { q += $1 } END { print a + 0, q + 0 }')"
share=$(awk -v a="$pass" -v q="$held" 'BEGIN { printf "%.1f", (a + q > 0) ? 100 * a / (a + q) : 0 }')
mc_within "$share" 8 25
ok $? "delay 100,100: $share% of $((pass + held)) packets pass unheld in the kernel (15.9% expected)"
mc fault clear fmn2
rtt=$(mc_ping_rtt fmn1 fmn2 20 0.02)
mc_within "$rtt" 0 2
ok $? "clear restores the round trip: $rtt ms"
is "$(mc_exec sw iptables-legacy -S FORWARD | grep -c FMD_)" 0 "no delay rule is left"
fi

## rate
fast=$(kbit fmn1 fmn2)
[ "$fast" -gt 20000 ]
ok $? "throughput fmn1->fmn2 before: $fast kbit/s"
mc fault add fmn2 rate 1000 --dir in
ok $? "fault add fmn2 rate 1000 --dir in"
r=$(kbit fmn1 fmn2)
mc_within "$r" 500 1150
ok $? "traffic into fmn2 is limited to about 1000 kbit/s: $r"
r=$(kbit fmn2 fmn1)
[ "$r" -gt 20000 ]
ok $? "traffic out of fmn2 is not: $r kbit/s"
mc fault clear fmn2
mc fault add fmn1 rate 2000 --dir out
r=$(kbit fmn1 fmn3)
mc_within "$r" 1000 2300
ok $? "rate 2000 --dir out on fmn1 limits what it sends: $r kbit/s"
mc fault clear
r=$(kbit fmn1 fmn2)
[ "$r" -gt 20000 ]
ok $? "clear restores throughput: $r kbit/s"

## down
mc fault add fmn2 down
ok $? "fault add fmn2 down"
is "$(mc_ping_loss fmn1 fmn2 10 0.05)" 100 "a down link drops everything"
is "$(mc_ping_loss fmn1 fmn3 10 0.05)" 0 "other nodes still talk"
mc fault clear fmn2
is "$(mc_ping_loss fmn1 fmn2 10 0.1)" 0 "clear brings the link back"
mc fault add fmn2 down --dir out
is "$(mc_ping_loss fmn1 fmn2 10 0.05)" 100 "down --dir out drops the replies"
mc fault clear fmn2

## flap
mc fault add fmn2 flap 1
ok $? "fault add fmn2 flap 1"
loss=$(mc_ping_loss fmn1 fmn2 60 0.05)
mc_within "$loss" 20 80
ok $? "pings over three flap periods are partly lost: $loss%"
downs=$(grep -c '^down' "$MC_RUNDIR/log/flap-fmn2.log")
ups=$(grep -c '^up' "$MC_RUNDIR/log/flap-fmn2.log")
[ "$downs" -ge 3 ] && [ "$ups" -ge 2 ]
ok $? "the link cycled: $downs downs, $ups ups"
pid=$(cat "$MC_RUNDIR/faults/fmn2.flap.pid")
mc fault clear fmn2
! kill -0 "$pid" 2>/dev/null || grep -q '^State:.*Z' "/proc/$pid/status"
ok $? "clear stops the flapping process"
mc_exec sw ip -o link show dev v-fmn2 | grep -q 'state UP'
ok $? "and leaves the link up"

## bad requests
mc fault add fmn2 loss 150 >/dev/null 2>&1
ok $((! $?)) "loss over 100% is refused"
mc fault add fmn2 jam >/dev/null 2>&1
ok $((! $?)) "an unknown fault kind is refused"
mc fault add fmn9 down >/dev/null 2>&1
ok $((! $?)) "a node that does not exist is refused"
is "$(mc fault list)" "(none)" "nothing was left active"
done_testing

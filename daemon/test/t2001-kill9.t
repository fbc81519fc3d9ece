#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Durability: kill -9 fabricd twice while bench/ingest posts; after restarts every
# acknowledged window is stored exactly once, with all its records.
. "$(dirname "$0")/lib.sh"
fm_setup
[ -x "$INGEST" ] || plan_skip_all "bench/ingest is not built"
fm_munged_start || exit 1
fm_fabricd_start || exit 1
plan 9

J=4242
NODES=8
PEERS=7
"$INGEST" --url "$FD_URL" --munge-socket "$MUNGE_SOCKET" --job $J --nodes $NODES \
    --windows 8 --threads 2 --duration 5 --retry --ack-log "$T/acks" \
    >"$T/ingest.out" 2>&1 &
ING=$!
fm_pids="$fm_pids $ING"

sleep 1.2
fm_fabricd_kill KILL
sleep 0.3
fm_fabricd_start
ok $? "fabricd restarts after kill -9 (1)"
sleep 1.2
fm_fabricd_kill KILL
fm_fabricd_start
ok $? "fabricd restarts after kill -9 (2)"
wait "$ING"
is "$?" 0 "the load generator finished"
diag "$(cat "$T/ingest.out")"
acked=$(sort -u "$T/acks" | wc -l)
test "$acked" -gt 100
ok $? "windows were acknowledged across the kills ($acked)"

job=$(fm_get /v1/jobs/$J | fm_body)
bad=$(echo "$job" | jq '[.agents[] | select(.windows != .last_seq + 1)] | length')
is "$bad" 0 "per node, stored windows are exactly seq 0..last_seq (no gaps, no duplicates)"
echo "$job" | jq -r '.agents[] | "\(.node) \(.last_seq)"' >"$T/last"
missing=$(sort -u "$T/acks" \
    | awk 'NR == FNR { last[$1] = $2; next } !($1 in last) || $2 > last[$1]' "$T/last" - \
    | wc -l)
is "$missing" 0 "every acknowledged window is present"

fm_fabricd_kill TERM
is "$FD_RC" 0 "the restarted fabricd exits 0 on SIGTERM"
if command -v sqlite3 >/dev/null; then
    sqlite3 "$T/state/fabricd.db" \
        "SELECT n.name || ' ' || w.seq FROM windows w JOIN nodes n ON n.id = w.node_id WHERE w.job_id = $J" \
        | sort >"$T/stored"
    is "$(sort -u "$T/acks" | comm -23 - "$T/stored" | wc -l)" 0 \
        "sqlite: the acknowledged set is a subset of the stored set"
    is "$(sqlite3 "$T/state/fabricd.db" "SELECT count(*) FROM windows w WHERE w.nlinks != $((PEERS * 2)) OR (SELECT count(*) FROM links l WHERE l.window_id = w.id) != w.nlinks")" \
        0 "sqlite: every stored window has all of its records"
else
    skip "sqlite3 is not installed"
    skip "sqlite3 is not installed"
fi
done_testing

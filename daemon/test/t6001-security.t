#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Security, against a real munged, fabricd and fabric-agents (t5001-auth.t has
# the basic credential cases): credentials bound to their method, path and
# lifetime; a user reads only their own jobs; admins are not reporters; forged
# and foreign probe packets are ignored (no answer) and counted, by the agent
# and in fabricd's /metrics; state, store
# and spool are created with safe modes and insecure ones are refused.
. "$(dirname "$0")/lib.sh"
fm_setup
command -v setpriv >/dev/null || plan_skip_all "setpriv is not installed"
command -v python3 >/dev/null || plan_skip_all "python3 is not installed"
getent passwd daemon >/dev/null || plan_skip_all "no 'daemon' user"
AGENT=$FM_TOP_BUILDDIR/agent/fabric-agent
[ -x "$AGENT" ] || plan_skip_all "fabric-agent is not built"
fm_munged_start || exit 1
# fabricd creates everything under umask 0: the modes are its own, not luck
FD_CONF_EXTRA='report_window = 1s'
fm_write_conf
sed -i 's/^admin_uids = .*/admin_uids = "daemon"/' "$T/fabricd.conf"
umask 0000
fm_fabricd_start || exit 1
umask 0022
plan 26

J=61
NOBODY=$(id -u nobody)

# --- credentials are bound to their request and their lifetime ---------------
fm_register_body $J n1 "$NOBODY" 9001 'n[1-2]' >"$T/reg"
auth=$(fm_auth GET /v1/jobs/$J)
out=$(fm_curl -X POST -H "Authorization: $auth" -H 'Content-Type: application/json' \
    --data-binary "@$T/reg" "$FD_URL/v1/agents")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "401 auth_mismatch" \
    "a root credential made for a GET is refused for a POST"
auth=$(fm_auth GET /v1/jobs/$((J + 1)))
out=$(fm_curl -H "Authorization: $auth" "$FD_URL/v1/jobs/$J")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "401 auth_mismatch" \
    "a credential for another job's path is refused"
auth=$(fm_auth GET /v1/nodes)
out=$(fm_curl -H "Authorization: $auth" "$FD_URL/v1/nodes?job=1")
is "$(echo "$out" | fm_body | jq -r .error.code)" auth_mismatch \
    "a credential does not cover a query string it was not made for"
cred=$(printf 'fm1 GET /v1/nodes %s' "$(sha256sum </dev/null | cut -d' ' -f1)" \
    | munge --socket="$MUNGE_SOCKET" --ttl=1)
sleep 2.2
out=$(fm_curl -H "Authorization: Munge $cred" "$FD_URL/v1/nodes")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "401 auth_invalid" \
    "an expired credential (ttl 1 s, sent 2 s later) is refused"

# --- who may read and write what ------------------------------------------------
is "$(fm_post /v1/agents "$T/reg" | fm_code)" 201 "root registers n1 of job $J (user nobody)"
for p in "" /peers /summary; do
    out=$(fm_get "/v1/jobs/$J$p" nobody)
    is "$(echo "$out" | fm_code)" 200 "the owner reads /v1/jobs/$J$p"
done
for p in "" /peers /summary; do
    out=$(fm_get "/v1/jobs/$J$p" games)
    is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" \
        "403 forbidden" "another user may not read /v1/jobs/$J$p"
done
is "$(fm_get "/v1/jobs/$J/peers" daemon | fm_body | jq -r 'has("probe_key")')" false \
    "an admin reads the peers, but never the probe key"
fm_report $J n1 "$(fm_window 0 n2 0)" >"$T/r0"
out=$(fm_post /v1/reports "$T/r0" daemon)
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "403 forbidden" \
    "an admin is not a reporter: it may not post reports"
is "$(fm_post /v1/agents "$T/reg" daemon | fm_code)" 403 "nor register agents"
is "$(fm_get /v1/nodes games | fm_code) $(fm_get /v1/links games | fm_code)" "403 403" \
    "a plain user may read neither /v1/nodes nor /v1/links"

# --- safe modes ------------------------------------------------------------------
is "$(stat -c %a "$T/state")" 700 "fabricd's state directory is 0700 (made under umask 0)"
bad=$(find "$T/state" -mindepth 1 -perm /022 | wc -l)
is "$bad" 0 "nothing in it (database, journal) is group or other writable"
fm_fabricd_kill TERM
mkdir -m 0777 "$T/open"
sed "s|^state_dir = .*|state_dir = \"$T/open/state\"|" "$T/fabricd.conf" >"$T/open.conf"
out=$(timeout 10 "$FABRICD" -c "$T/open.conf" 2>&1)
rc=$?
ok "$([ $rc -ne 0 ] && [ ! -e "$T/open/state" ]; echo $?)" \
    "fabricd refuses a state directory under a world-writable parent, creating nothing (rc $rc)"
echo "$out" | grep -q 'writable'
ok $? "and says why: $(echo "$out" | grep -m1 writable)"
umask 0000
fm_fabricd_start || exit 1
umask 0022

# --- probe packets without the job key, or from another job -----------------------
free_udp () {
    python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
p1=$(free_udp)
p2=$(free_udp)
agents=
for n in 1 2; do
    port=$p1
    [ $n = 2 ] && port=$p2
    (umask 0000; exec "$AGENT" --daemon "$FD_URL" --job 62 --node n$n --nodes 'n[1-2]' \
        --uid 0 --munge-socket "$MUNGE_SOCKET" --statedir "$T/agent$n" --bind 127.0.0.1 \
        --port "$port" --rate 20 >>"$T/agent$n.log" 2>&1) &
    agents="$agents $!"
    fm_pids="$fm_pids $!"
done
for _ in $(seq 100); do
    [ "$(cat "$T"/agent[12].log | grep -c 'registered for job 62')" -ge 2 ] && break
    sleep 0.1
done
key=$(fm_get /v1/jobs/62/peers | fm_body | jq -r .probe_key)
echo "$key" | grep -Eq '^[0-9a-f]{64}$'
ok $? "root (a reporter) reads the job's probe key"

# 30 requests with a wrong key, 30 with the job's key but for job 63 (outside
# the job), all aimed at n1 (index 0) as if from n2; crypto_auth is
# HMAC-SHA512-256. Version and size come from the wire format's header.
python3 - "$p1" "$key" "$FM_TOP_SRCDIR/include/fm/probe.h" <<'PY'
import hashlib, hmac, os, re, socket, struct, sys
port, key = int(sys.argv[1]), bytes.fromhex(sys.argv[2])
h = dict(re.findall(r"#define FM_PROBE_(VERSION|BODY_SIZE) (\d+)", open(sys.argv[3]).read()))
version, body_size = int(h["VERSION"]), int(h["BODY_SIZE"])
def probe(k, job, seq):
    body = struct.pack(">IBBHQHHIQ", 0x464D5052, version, 1, 0, job, 1, 0, 1, seq)
    body += bytes(body_size - len(body))
    return body + hmac.new(k, body, hashlib.sha512).digest()[:32]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(30):
    s.sendto(probe(os.urandom(32), 62, 1000 + i), ("127.0.0.1", port))
    s.sendto(probe(key, 63, 2000 + i), ("127.0.0.1", port))
PY
sleep 1
for a in $agents; do
    kill -TERM "$a"
done
for a in $agents; do
    wait "$a"
done
fm_pids=$(for p in $fm_pids; do case " $agents " in *" $p "*) ;; *) echo "$p" ;; esac; done)
is "$(sed -n 's/.*; dropped \([0-9]*\) bad datagrams;.*/\1/p' "$T/agent1.log")" 60 \
    "n1 counted exactly the 60 bad datagrams"
grep -q 'dropping probe datagrams from 127.0.0.1: bad_tag' "$T/agent1.log" \
    && grep -q 'dropping probe datagrams from 127.0.0.1: foreign' "$T/agent1.log"
ok $? "and logged each reason (bad_tag, foreign)" \
    || diag "$(grep 'dropping probe' "$T/agent1.log")"
is "$(sed -n 's/.*; dropped \([0-9]*\) bad datagrams;.*/\1/p' "$T/agent2.log")" 0 \
    "n2, which was not attacked, dropped none"
# the agents' windows carry the counts to fabricd (the last at their exit)
m=$(curl -s "$FD_URL/metrics")
echo "$m" | grep -qx 'fabricd_probe_drops_total{node="n1",reason="bad_tag"} 30' \
    && echo "$m" | grep -qx 'fabricd_probe_drops_total{node="n1",reason="foreign"} 30'
ok $? "/metrics counts n1's drops by reason: 30 bad_tag, 30 foreign" \
    || diag "$(echo "$m" | grep probe_drops)"
# a peer's probes that arrive before its address is known count as
# unknown_sender at start: not an attack
! echo "$m" | grep 'fabricd_probe_drops_total{node="n2"' | grep -vq 'reason="unknown_sender"'
ok $? "and none for n2 but unknown senders at start" \
    || diag "$(echo "$m" | grep 'node="n2"')"
is "$(stat -c %a "$T/agent1/spool")" 700 "the agent's spool directory is 0700 (made under umask 0)"
done_testing

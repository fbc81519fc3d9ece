#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every endpoint against a real fabricd and munged: registration, reports,
# idempotent resend, strict validation (400 with the field), caps, reads, fabricctl.
. "$(dirname "$0")/lib.sh"
fm_setup
fm_munged_start || exit 1
FD_CONF_EXTRA='max_body = 64k'
fm_fabricd_start || exit 1
plan 91

J=77
NOBODY=$(id -u nobody)

# Registration
fm_register_body $J n1 "$NOBODY" 9001 'n[1-2]' >"$T/reg1"
out=$(fm_post /v1/agents "$T/reg1")
is "$(echo "$out" | fm_code)" 201 "POST /v1/agents: first registration is 201"
b=$(echo "$out" | fm_body)
key=$(echo "$b" | jq -r .probe_key)
echo "$key" | grep -Eq '^[0-9a-f]{64}$'
ok $? "probe_key is 32 bytes of hex"
is "$(echo "$b" | jq -c '[.agent_id, .expected, .window_ns, (.peers|length), .targets, .probers, .plan.nodes]')" \
    '[1,2,5000000000,0,["n2"],["n2"],2]' \
    "agent_id, expected, window_ns, the plan (targets, probers) and no peer registered yet"
fm_register_body $J n2 "$NOBODY" 9002 >"$T/reg2"
is "$(fm_post /v1/agents "$T/reg2" | fm_code)" 201 "second node registers"
out=$(fm_post /v1/agents "$T/reg1")
is "$(echo "$out" | fm_code)" 200 "re-registration is 200"
b=$(echo "$out" | fm_body)
is "$(echo "$b" | jq -r '.agent_id')" 1 "re-registration keeps the agent id"
is "$(echo "$b" | jq -r '.probe_key')" "$key" "the probe key is per job, generated once"
is "$(echo "$b" | jq -c '[.peers[].node]')" '["n2"]' "the peer list holds the registered targets and probers"
fm_register_body $J n3 0 9003 >"$T/reg3"
out=$(fm_post /v1/agents "$T/reg3")
is "$(echo "$out" | fm_code)" 409 "registration with another job owner is a conflict"
fm_register_body $J n3 0 9003 'n[1-2]' | sed "s/\"user_id\":0/\"user_id\":$NOBODY/" >"$T/reg3"
out=$(fm_post /v1/agents "$T/reg3")
is "$(echo "$out" | fm_body | jq -r .error.field)" job_nodes \
    "job_nodes must contain the registering node"
sed 's/"probe_port":9003/"probe_port":70000/' "$T/reg2" >"$T/reg4"
sed -i 's/"probe_port":9002/"probe_port":70000/' "$T/reg4"
out=$(fm_post /v1/agents "$T/reg4")
is "$(echo "$out" | fm_body | jq -r '.error.code + " " + .error.field')" \
    "invalid_field probe_port" "an out-of-range probe_port is refused by name"

is "$(fm_get /v1/jobs/$J | fm_body | jq -r .mode)" observe "the mode defaults to observe"
fm_register_body 78 n1 "$NOBODY" 9001 | sed 's/^{/{"mode":"protect",/' >"$T/regp"
out=$(fm_post /v1/agents "$T/regp")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .mode)" "201 protect" \
    "a protect registration says so"
fm_register_body 78 n2 "$NOBODY" 9002 | sed 's/^{/{"mode":"observe",/' >"$T/rego"
fm_post /v1/agents "$T/rego" >/dev/null
is "$(fm_get /v1/jobs/78 | fm_body | jq -r .mode)" protect \
    "the job's first registration fixes its mode"
for m in '"watch"' 1 null; do
    fm_register_body 79 n1 "$NOBODY" 9001 | sed "s/^{/{\"mode\":$m,/" >"$T/regx"
    out=$(fm_post /v1/agents "$T/regx")
    is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.field)" \
        "400 mode" "mode $m is refused by name"
done
is "$(fm_get /v1/jobs/79 | fm_code)" 404 "and nothing of it is stored"

out=$(fm_get /v1/jobs/$J/peers)
is "$(echo "$out" | fm_code)" 200 "GET /v1/jobs/ID/peers"
is "$(echo "$out" | fm_body | jq -c '[(.peers|length), .expected, .probe_key]')" \
    "[2,2,\"$key\"]" "peers (all of them without ?node), expected and the key for a report uid"
out=$(fm_get "/v1/jobs/$J/peers?node=n2")
is "$(echo "$out" | fm_body | jq -c '[[.peers[].node], .targets, .probers]')" \
    '[["n1"],["n1"],["n1"]]' "GET .../peers?node=n2: that node's plan"
is "$(fm_get "/v1/jobs/$J/peers?node=n7" | fm_code)" 404 "a node not in the job is 404"

# Reports
fm_report $J n1 "$(fm_window 0 n2 10)" >"$T/r0"
out=$(fm_post /v1/reports "$T/r0")
is "$(echo "$out" | fm_code)" 200 "POST /v1/reports"
is "$(echo "$out" | fm_body | jq -c .)" '{"accepted":1,"duplicates":0,"records":2}' \
    "one window, two link-window records stored"
out=$(fm_post /v1/reports "$T/r0")
is "$(echo "$out" | fm_body | jq -c .)" '{"accepted":0,"duplicates":1,"records":0}' \
    "an identical resend is acknowledged as a duplicate"
fm_report $J n1 "$(fm_window 1 n2 0)" \
    "$(fm_window 2 n2 0 | sed 's/"error_ns":5/"error_ns":5,"drift_ppb":-12.5/')" >"$T/r12"
is "$(fm_post /v1/reports "$T/r12" | fm_body | jq -c .accepted)" 2 "a batch of two windows"
fm_report $J n2 "$(fm_window 0 n1 0)" >"$T/rn2"
is "$(fm_post /v1/reports "$T/rn2" | fm_code)" 200 "the second node reports"
fm_report $J n9 "$(fm_window 0 n1 0)" >"$T/rn9"
out=$(fm_post /v1/reports "$T/rn9")
is "$(echo "$out" | fm_code)" 404 "a report from an unregistered node is 404"

windows_of () {
    fm_get /v1/jobs/$J | fm_body | jq -r '[.agents[].windows] | add'
}
is "$(windows_of)" 4 "four windows stored so far"

# 400: each case is "sed expression|expected field" applied to a valid report.
fm_report $J n1 "$(fm_window 3 n2 0)" >"$T/base"
cases=(
    's/"job_id":77/"job_id":77,"extra":1/|extra'
    's/"reordered":1}/"reordered":1,"bogus":true}/|windows[0].links[1].bogus'
    's/"seq":3/"seq":"3"/|windows[0].seq'
    's/"sent":100,"received":100/"sent":-1,"received":100/|windows[0].links[0].sent'
    's/"lost":0,"reordered":1/"lost":101,"reordered":1/|windows[0].links[1].lost'
    's/"p50":1000,/"p50":1000.5,/|windows[0].links[0].rtt_ns.p50'
    's/"p90":2000/"p90":500/|windows[0].links[0].rtt_ns.p90'
    's/"max":4000/"max":99000000000/|windows[0].links[0].rtt_ns.max'
    's/"dir":"in"/"dir":"sideways"/|windows[0].links[1].dir'
    's/"type":"nic"/"type":"toaster"/|windows[0].health[0].type'
    's/"peer":"n2","dir":"out"/"peer":"bad name","dir":"out"/|windows[0].links[0].peer'
    's/"end_ns":[0-9]*/"end_ns":1/|windows[0].end_ns'
    's/"start_ns":[0-9]*/"start_ns":9000000000000000000/|windows[0].start_ns'
    's/"job_id":77/"job_id":0/|job_id'
    's/"received":100,/"received":"100",/|windows[0].links[0].received'
    's/"error_ns":5/"error_ns":-5/|windows[0].clock.error_ns'
    's/"error_ns":5/"error_ns":5,"drift_ppb":2e6/|windows[0].clock.drift_ppb'
    's/"error_ns":5/"error_ns":5,"drift_ppb":null/|windows[0].clock.drift_ppb'
    's/"link_up":true/"link_up":1/|windows[0].health[0].link_up'
    's/^\(.*"windows":\)\[.*\]}$/\1[]}/|windows'
)
for c in "${cases[@]}"; do
    expr=${c%%|*}
    field=${c##*|}
    sed -e "$expr" "$T/base" >"$T/bad"
    out=$(fm_post /v1/reports "$T/bad")
    is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.field)" \
        "400 $field" "400 names $field ($expr)"
done
for expr in 's/"offset_ns":10/"offset_ns":NaN/' \
    's/"sent":100,"received":100/"sent":100,"received":100,"sent":5/' \
    's/}]}$/}/'; do
    sed -e "$expr" "$T/base" >"$T/bad"
    out=$(fm_post /v1/reports "$T/bad")
    is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" \
        "400 invalid_json" "not JSON is 400 invalid_json ($expr)"
done
fm_report $J n1 "$(fm_window 4 n2 0)" "$(fm_window 5 n2 0 | sed 's/"sent":100,"received":100/"sent":-3,"received":100/')" >"$T/half"
out=$(fm_post /v1/reports "$T/half")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.field)" \
    "400 windows[1].links[0].sent" "a batch with one bad window is refused"
is "$(windows_of)" 4 "nothing of a refused batch is stored"

# The agent's last batch says so; the job view shows who is done.
finals () {
    fm_get /v1/jobs/$J | fm_body | jq -c '[.agents[] | [.node, .final]]'
}
is "$(finals)" '[["n1",false],["n2",false]]' "no agent is final before its last batch"
sed 's/^{/{"final":true,/' "$T/rn2" >"$T/rn2f"
out=$(fm_post /v1/reports "$T/rn2f")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -c .duplicates)" "200 1" \
    "a final batch (here a resend) is accepted"
is "$(finals)" '[["n1",false],["n2",true]]' "and marks its agent final"
sed 's/^{/{"final":"yes",/' "$T/rn2" >"$T/bad"
out=$(fm_post /v1/reports "$T/bad")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.field)" "400 final" \
    "a final that is not a boolean is refused by name"
fm_post /v1/agents "$T/reg2" >/dev/null
is "$(finals)" '[["n1",false],["n2",false]]' "a new registration (a restart) is not final"

# Caps and transport errors
{ printf '{"job_id":77,"node":"n1","windows":['; head -c 70000 /dev/zero | tr '\0' ' '; printf ']}'; } >"$T/big"
out=$(fm_post /v1/reports "$T/big")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "413 too_large" \
    "a body over max_body is 413 before parsing"
w=$(fm_window 9 n2 0)
ws=$(for i in $(seq 257); do printf '%s,' "$w"; done)
printf '{"job_id":77,"node":"n1","windows":[%s]}' "${ws%,}" >"$T/many"
out=$(fm_post /v1/reports "$T/many")
is "$(echo "$out" | fm_code)" 413 "257 windows: over max_body or the window cap is 413"
auth=$(fm_auth POST /v1/reports /dev/null)
out=$(fm_curl -X POST -H "Authorization: $auth" -H 'Content-Type: application/json' "$FD_URL/v1/reports")
is "$(echo "$out" | fm_code)" 411 "POST without a body is 411"
out=$(fm_curl -X POST -H "Authorization: $(fm_auth POST /v1/reports "$T/r0")" -H 'Content-Type: text/plain' --data-binary "@$T/r0" "$FD_URL/v1/reports")
is "$(echo "$out" | fm_code)" 415 "a non-JSON Content-Type is 415"
is "$(fm_get /v1/reports | fm_code)" 405 "GET /v1/reports is 405"
is "$(fm_get /v1/nope | fm_code)" 404 "an unknown path is 404"
is "$(fm_get /v1/jobs/999/peers | fm_code)" 404 "an unknown job is 404"
is "$(fm_get '/v1/links?since=bogus' | fm_body | jq -r .error.field)" since \
    "a malformed since is 400 naming it"

# Reads
out=$(fm_get /v1/nodes)
is "$(echo "$out" | fm_code)" 200 "GET /v1/nodes"
is "$(echo "$out" | fm_body | jq -c '[.nodes[] | [.node, .windows, .links, .clock_offset_ns, .clock_drift_ppb, (.health|length)]]')" \
    '[["n1",3,2,10,-12.5,1],["n2",1,2,10,null,1]]' "nodes: windows, links, clock and drift, health"
out=$(fm_get '/v1/links?worst=1')
is "$(echo "$out" | fm_body | jq -c '[.links[] | [.src, .dst, .reporter, .sent, .lost]]')" \
    '[["n1","n2","n1",300,10]]' "links?worst=1 is the lossy direction"
out=$(fm_get /v1/links)
is "$(echo "$out" | fm_body | jq '.links | length')" 4 "four link directions in all"
out=$(fm_get /v1/jobs/$J)
is "$(echo "$out" | fm_body | jq -c '[.job_id, .user_id, (.agents|map(.last_seq))]')" \
    "[$J,$NOBODY,[2,0]]" "GET /v1/jobs/ID: owner and last_seq per agent"
out=$(fm_get /v1/jobs/$J/summary)
is "$(echo "$out" | fm_body | jq -c '[.mode, .windows, .records, (.links|length)]')" \
    '["observe",4,8,4]' "GET /v1/jobs/ID/summary"
out=$(fm_get "/v1/jobs/$J/summary?worst=2")
is "$(echo "$out" | fm_body | jq -c '[(.links|length), .nlinks, (.links|map(.loss_ratio)|.[0] >= .[1])]')" \
    '[2,4,true]' "GET /v1/jobs/ID/summary?worst=2: the 2 worst links of 4, worst first"
m=$(curl -s "$FD_URL/metrics")
echo "$m" | grep -q '^fabricd_link_loss_ratio{src="n1",dst="n2",reporter="n1"} 0.033333$'
ok $? "/metrics: per-link loss gauge"
echo "$m" | grep -q '^fabricd_ingest_records_total 8$'
ok $? "/metrics: ingest counter"
echo "$m" | grep -q '^fabricd_http_request_duration_seconds_count{route="/v1/reports"}'
ok $? "/metrics: request latency histogram"
echo "$m" | grep -q '^fabricd_node_clock_offset_seconds{node="n1"}'
ok $? "/metrics: per-node gauge"

# fabricctl
CTL="$FABRICCTL --url $FD_URL --munge-socket $MUNGE_SOCKET"
out=$($CTL status)
echo "$out" | grep -Eq '^records: +8$'
ok $? "fabricctl status"
out=$($CTL nodes)
echo "$out" | head -1 | grep -q '^NODE  *LAST_SEEN'
ok $? "fabricctl nodes prints a header"
is "$(echo "$out" | awk 'NR>1 {print $1}' | tr '\n' ' ')" "n1 n2 " "fabricctl nodes lists both nodes"
out=$($CTL links --worst 1)
is "$(echo "$out" | awk 'NR==2 {print $1, $2, $6, $7}')" "n1 n2 10 3.33%" \
    "fabricctl links --worst 1: aligned table, worst first"
is "$($CTL --json links --worst 2 | jq '.links | length')" 2 "fabricctl --json links"
out=$($CTL job $J)
echo "$out" | grep -q "^job $J  user $NOBODY  nodes 2/2"
ok $? "fabricctl job ID"
is "$($CTL --json job $J | jq -c '[.job_id, .summary.records]')" "[$J,8]" "fabricctl --json job"
out=$("$FABRICCTL" -c "$T/fabricd.conf" status 2>&1)
echo "$out" | grep -q '^status: *ok'
ok $? "fabricctl takes the URL and munge socket from the configuration" || diag "$out"
out=$($CTL job 999 2>&1)
is "$?" 1 "fabricctl job of an unknown job fails"
echo "$out" | grep -q 'HTTP 404 not_found'
ok $? "and says why: $out"

fm_fabricd_kill TERM
is "$FD_RC" 0 "fabricd exits 0 on SIGTERM after all of the above"
out=$($CTL status 2>&1)
is "$?" 1 "fabricctl fails when the daemon is down"
echo "$out" | grep -q "cannot reach fabricd at $FD_URL"
ok $? "with a clear message: $out"
done_testing

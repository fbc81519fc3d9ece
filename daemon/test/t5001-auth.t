#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Authentication and authorisation with a real munged: missing, invalid, replayed
# and mismatched credentials, wrong uids, job owners, admin users and groups.
. "$(dirname "$0")/lib.sh"
fm_setup
command -v setpriv >/dev/null || plan_skip_all "setpriv is not installed"
getent passwd daemon >/dev/null || plan_skip_all "no 'daemon' user"
fm_munged_start || exit 1
fm_fabricd_start || exit 1
plan 23

J=88
NOBODY=$(id -u nobody)

fm_register_body $J a1 "$NOBODY" 9001 >"$T/reg"
is "$(fm_post /v1/agents "$T/reg" | fm_code)" 201 "root registers an agent"
fm_register_body $J a2 "$NOBODY" 9002 >"$T/reg2"
is "$(fm_post /v1/agents "$T/reg2" slurm | fm_code)" 201 "the SlurmUser (report_uids) registers"
out=$(fm_post /v1/agents "$T/reg" nobody)
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "403 forbidden" \
    "nobody may not register"

fm_report $J a1 "$(fm_window 0 a2 0)" >"$T/r0"
out=$(fm_post /v1/reports "$T/r0" nobody)
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "403 forbidden" \
    "a report from a wrong uid is 403"
out=$(fm_curl -X POST -H 'Content-Type: application/json' --data-binary "@$T/r0" "$FD_URL/v1/reports")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "401 auth_required" \
    "a report without a credential is 401"
out=$(fm_curl -X POST -H 'Authorization: Munge MUNGE:garbage:' -H 'Content-Type: application/json' --data-binary "@$T/r0" "$FD_URL/v1/reports")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "401 auth_invalid" \
    "a credential that does not decode is 401"

auth=$(fm_auth POST /v1/reports "$T/r0")
out=$(fm_curl -X POST -H "Authorization: $auth" -H 'Content-Type: application/json' --data-binary "@$T/r0" "$FD_URL/v1/reports")
is "$(echo "$out" | fm_code)" 200 "a report from root is accepted"
out=$(fm_curl -X POST -H "Authorization: $auth" -H 'Content-Type: application/json' --data-binary "@$T/r0" "$FD_URL/v1/reports")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "401 auth_replayed" \
    "the same credential again is a replay"

fm_report $J a1 "$(fm_window 1 a2 0)" >"$T/r1"
sed 's/"lost":0/"lost":7/' "$T/r1" | sed 's/"received":100,"lost":7,"reordered":0/"received":93,"lost":7,"reordered":0/' >"$T/r1x"
auth=$(fm_auth POST /v1/reports "$T/r1")
out=$(fm_curl -X POST -H "Authorization: $auth" -H 'Content-Type: application/json' --data-binary "@$T/r1x" "$FD_URL/v1/reports")
is "$(echo "$out" | fm_code) $(echo "$out" | fm_body | jq -r .error.code)" "401 auth_mismatch" \
    "a tampered body is refused"
echo "$out" | fm_body | jq -r .error.message | grep -q 'does not match'
ok $? "with a clear message"
auth=$(fm_auth POST /v1/agents "$T/r1")
out=$(fm_curl -X POST -H "Authorization: $auth" -H 'Content-Type: application/json' --data-binary "@$T/r1" "$FD_URL/v1/reports")
is "$(echo "$out" | fm_body | jq -r .error.code)" auth_mismatch \
    "a credential made for another path is refused"
is "$(fm_get /v1/jobs/$J | fm_body | jq -r '[.agents[].windows] | add')" 1 \
    "refused reports stored nothing"

is "$(fm_get /v1/jobs/$J nobody | fm_code)" 200 "the job owner reads the job"
is "$(fm_get /v1/jobs/$J/peers nobody | fm_body | jq -r 'has("probe_key")')" false \
    "the owner sees the peers but not the probe key"
is "$(fm_get /v1/jobs/$J/summary daemon | fm_code)" 403 "another user may not read the job"
is "$(fm_get /v1/nodes nobody | fm_code)" 403 "a non-admin may not read /v1/nodes"
is "$(fm_get /v1/links daemon | fm_code)" 403 "a non-admin may not read /v1/links"
is "$(curl -s -o /dev/null -w '%{http_code}' "$FD_URL/v1/nodes")" 401 \
    "/v1/nodes without a credential is 401"

fm_fabricd_kill TERM
is "$FD_RC" 0 "fabricd exits 0 on SIGTERM"
sed -i -e 's/^admin_uids = .*/admin_uids = "daemon"/' \
    -e 's/^admin_groups = .*/admin_groups = "nogroup"/' "$T/fabricd.conf"
echo "metrics_public = no" >>"$T/fabricd.conf"
fm_fabricd_start || exit 1
is "$(fm_get /v1/nodes daemon | fm_code)" 200 "admin_uids may read /v1/nodes"
is "$(fm_get /v1/links nobody | fm_code)" 200 "members of admin_groups may read /v1/links"
is "$(curl -s -o /dev/null -w '%{http_code}' "$FD_URL/metrics")" 401 \
    "metrics_public = no: /metrics needs a credential"
is "$(fm_get /metrics | fm_code)" 200 "and an admin may read it"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# fabricd start-up: command line, configuration errors, munge requirement, readiness.
. "$(dirname "$0")/lib.sh"
fm_setup
plan 15

"$FABRICD" --help | grep -q -- '--insecure-local'
ok $? "--help documents --insecure-local"

fm_write_conf
out=$("$FABRICD" -c "$T/fabricd.conf" 2>&1)
rc=$?
is "$rc" 1 "no munged: fabricd refuses to start"
echo "$out" | grep -q 'munge is not usable.*--insecure-local'
ok $? "the refusal names munge and --insecure-local on the terminal"

sed 's/^listen_address = .*/listen_address = 0.0.0.0/' "$T/fabricd.conf" >"$T/any.conf"
out=$("$FABRICD" -c "$T/any.conf" --insecure-local 2>&1)
is "$?" 1 "--insecure-local refuses a non-loopback listen_address"
echo "$out" | grep -q 'only loopback'
ok $? "the refusal says why"

{ cat "$T/fabricd.conf"; echo "no_such_key = 1"; } >"$T/bad.conf"
out=$("$FABRICD" -c "$T/bad.conf" 2>&1)
is "$?" 1 "an unknown configuration key is fatal"
echo "$out" | grep -q "bad.conf:.*no_such_key"
ok $? "the error names the file, line and key: $out"

out=$("$FABRICD" -c "$T/fabricd.conf" --show-config 2>&1)
echo "$out" | grep -Eq "^listen_port *= *\"?$FD_PORT"
ok $? "--show-config prints the effective listen_port"

"$FABRICD" -c "$T/nonexistent.conf" >/dev/null 2>&1
is "$?" 1 "a missing explicit configuration file is fatal"

fm_munged_start
ok $? "private munged started"
fm_write_conf
fm_fabricd_start
ok $? "fabricd with munge becomes ready"
st=$(curl -s "$FD_URL/v1/status")
is "$(echo "$st" | jq -r '.api + " " + .status + " " + (.insecure|tostring)')" "v1 ok false" \
    "GET /v1/status needs no credential and answers JSON"

out=$("$FABRICD" -c "$T/fabricd.conf" 2>&1)
echo "$out" | grep -q "cannot listen on 127.0.0.1 port $FD_PORT"
ok $? "a second fabricd on the same port fails with a clear error"

fm_fabricd_kill TERM
is "$FD_RC" 0 "SIGTERM: fabricd exits 0 (no sanitizer report)"
grep -q "shutting down" "$T/fabricd.log"
ok $? "SIGTERM shuts fabricd down cleanly"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The per-job page in a real browser: a real fabricd and munged, four nodes
# of a job report their links, headless Chromium opens /jobs/ID, and the
# heatmap it renders has one cell per ordered pair (12) with the reported
# loss; a screenshot shows it. Also who may read the pages: by default only
# with a credential (the job's owner, admins), with pages_public = yes anyone.
# FM_SCREENSHOT_DIR=DIR keeps the screenshot there (doc/img for the docs).
. "$(dirname "$0")/lib.sh"
fm_setup
CHROMIUM=$(command -v chromium || command -v chromium-browser) \
    || plan_skip_all "chromium is not installed"
fm_munged_start || exit 1
fm_fabricd_start || exit 1
plan 19

J=4001
NOBODY=$(id -u nobody)
OTHER=daemon
NODES=(fmn1 fmn2 fmn3 fmn4)

# One window of node $1 (index $2) with an out-link to every other node:
# the one-way delay grows with the destination, fmn1 -> fmn3 loses 8%.
window () {
    local node=$1 i=$2 seq=$3 now start sep= j p lost owd
    now=$(($(date +%s%N) - (1 - seq) * 5000000000))
    start=$((now - 5000000000))
    printf '{"seq":%s,"start_ns":%s,"end_ns":%s,"clock":{"offset_ns":10,"error_ns":%s},"links":[' \
        "$seq" "$start" "$now" $((2000 * (i + 1) + 300 * seq))
    for j in 0 1 2 3; do
        [ "$j" -eq "$i" ] && continue
        p=${NODES[$j]}
        lost=0
        [ "$node" = fmn1 ] && [ "$p" = fmn3 ] && lost=8
        owd=$((15000 + 4000 * j))
        printf '%s{"peer":"%s","dir":"out","rtt_ns":{"p50":30000,"p90":31000,"p99":32000,"max":33000},' \
            "$sep" "$p"
        printf '"owd_ns":{"p50":%s,"p90":%s,"p99":%s,"max":%s},' \
            "$owd" $((owd + 100)) $((owd + 200)) $((owd + 300))
        printf '"sent":100,"received":%s,"lost":%s,"reordered":0}' $((100 - lost)) "$lost"
        sep=,
    done
    printf '],"health":[]}'
}

for i in 0 1 2 3; do
    n=${NODES[$i]}
    fm_register_body $J "$n" "$NOBODY" $((9100 + i)) 'fmn[1-4]' >"$T/reg$i"
    fm_post /v1/agents "$T/reg$i" >/dev/null
    fm_report $J "$n" "$(window "$n" "$i" 0)" "$(window "$n" "$i" 1)" >"$T/rep$i"
    out=$(fm_post /v1/reports "$T/rep$i")
    is "$(echo "$out" | fm_body | jq -c .records)" 6 "$n reports two windows of 3 links"
done

# Secure by default: a credential as for GET /v1/jobs/ID.
is "$(fm_curl "$FD_URL/jobs/$J" | fm_code)" 401 "no credential: 401 by default"
out=$(fm_get "/jobs/$J" nobody)
is "$(echo "$out" | fm_code)" 200 "the job's owner may read its page"
echo "$out" | fm_body | grep -q '^<!DOCTYPE html>'
ok $? "and it is an HTML document"
is "$(fm_get "/jobs/$J" "$OTHER" | fm_code)" 403 "another user may not"
is "$(fm_get / nobody | fm_code)" 403 "the fleet page is for admins"
out=$(fm_get /)
is "$(echo "$out" | fm_code)" 200 "which root is"
is "$(echo "$out" | fm_body | sed -n '/<table class="nodes">/,/<\/table>/p' \
      | grep -cE '<td class="st-(failed|degraded|suspect|healthy)">')" 4 \
    "it lists the 4 nodes with the fabric loop's state"
is "$(fm_get /jobs/9999 | fm_code)" 404 "an unknown job's page is 404"

# pages_public = yes: what a browser can open.
fm_fabricd_kill TERM
echo 'pages_public = yes' >>"$T/fabricd.conf"
fm_fabricd_start || exit 1
is "$(fm_curl "$FD_URL/jobs/$J" | fm_code)" 200 "pages_public: no credential needed"
is "$(fm_curl "$FD_URL/v1/jobs/$J" | fm_code)" 401 "the API still needs one"

chrome () {
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$T/chromium" --window-size=1000,1300 "$@" 2>>"$T/chromium.log"
}
chrome --dump-dom "$FD_URL/jobs/$J" >"$T/dom.html"
is "$(grep -o '<rect class="cell"' "$T/dom.html" | wc -l)" 12 \
    "Chromium renders 12 heatmap cells for 4 nodes" || diag "$(tail -5 "$T/chromium.log")"
is "$(grep -o '<rect class="diag"' "$T/dom.html" | wc -l)" 4 "and 4 empty diagonal cells"
grep -q 'data-src="fmn1" data-dst="fmn3" data-owd-ns="23000" data-loss="0.080000"' "$T/dom.html"
ok $? "the lossy pair carries its delay and loss"
is "$(grep -o '<polyline class="clock-node"' "$T/dom.html" | wc -l)" 4 \
    "a clock error bound line per node"

chrome --screenshot="$T/job.png" "$FD_URL/jobs/$J" >/dev/null
# The screenshot's pixels: the lossy cell's dark red (8% loss: near #67001f)
# and the clean cells' green must be on it, not a blank or error page.
colours=$(python3 - "$T/job.png" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
bpp = {2: 3, 6: 4}[ctype]
raw, stride = zlib.decompress(idat), w * bpp
prev, red, green = bytearray(stride), 0, 0
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        r, g, bl = line[x], line[x + 1], line[x + 2]
        red += r > 80 and g < 40 and bl < 80 and r > 2 * bl
        green += g > 120 and r < 100 and bl < 100
    prev = line
print(red > 200, green > 200)
EOF
)
is "$colours" "True True" "the screenshot shows the red lossy cell and green clean ones"
if [ -n "${FM_SCREENSHOT_DIR:-}" ]; then
    cp "$T/job.png" "$FM_SCREENSHOT_DIR/job-page.png"
    chrome --window-size=1000,700 --screenshot="$FM_SCREENSHOT_DIR/index-page.png" \
        "$FD_URL/" >/dev/null
fi
done_testing

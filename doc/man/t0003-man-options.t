#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The man pages and the programs agree on options: every long option a
# program's --help lists is in its page and every long option the page
# documents is in --help; every plugstack argument the plugin parses
# (spank/opts.c) is in fabric_monitor(8) and no other.
. "${FM_TOP_SRCDIR:?}/tests/tap.sh"

b="${FM_TOP_BUILDDIR:?}"
m="$FM_TOP_SRCDIR/doc/man"

# Long options of a page, from its OPTIONS and COMMANDS sections (".TP" items).
page_opts () {
    awk '/^\.SH (OPTIONS|COMMANDS)/ { on = 1; next } /^\.SH / { on = 0 }
         on && prev == ".TP" { print } { prev = $0 }' "$1" \
        | sed 's/\\-/-/g' | grep -o -- '--[a-z][a-z-]*' | sort -u
}
# (fabric-check's usage line shows the srun options it runs under: not its own)
help_opts () {
    "$@" --help 2>&1 | grep -v '^Usage: srun ' | grep -o -- '--[a-z][a-z-]*' | sort -u
}
compare () {
    local name=$1 page=$2
    shift 2
    if ! [ -x "$1" ]; then
        skip "$name not built"
        skip "$name not built"
        return
    fi
    is "$(comm -23 <(help_opts "$@") <(page_opts "$page") | tr '\n' ' ')" "" \
        "$name: every option of --help is in $(basename "$page")"
    is "$(comm -13 <(help_opts "$@") <(page_opts "$page") | tr '\n' ' ')" "" \
        "$name: every option of $(basename "$page") is in --help"
}

plan 10
compare fabricd "$m/fabricd.8" "$b/daemon/fabricd"
compare fabricctl "$m/fabricctl.1" "$b/cli/fabricctl"
compare fabric-agent "$m/fabric-agent.8" "$b/agent/fabric-agent"
compare fabric-check "$m/fabric-check.1" "$b/agent/fabric-check"

src=$(sed -n '/^int fm_opts_conf_parse/,/^}/p' "$FM_TOP_SRCDIR/spank/opts.c" \
    | grep -o '"[a-z_]*="\|"failonerror"' | tr -d '"=' | sort -u)
doc=$(awk '/^\.SH PLUGSTACK ARGUMENTS/ { on = 1; next } /^\.SH / { on = 0 }
           on && prev == ".TP" { print } { prev = $0 }' "$m/fabric_monitor.8" \
    | sed -n 's/^\.BI* \([a-z_]*\)=\{0,1\}.*/\1/p' | sort -u)
is "$(comm -23 <(echo "$src") <(echo "$doc") | tr '\n' ' ')" "" \
    "every plugstack argument of spank/opts.c is documented"
is "$(comm -13 <(echo "$src") <(echo "$doc") | tr '\n' ' ')" "" \
    "every documented plugstack argument exists"

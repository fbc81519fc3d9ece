#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The tree's layout rules (doc/layout.md): a component (lib, spank, agent, daemon, cli) reaches
# no sibling component's folder from its Makefile.am or its includes, only include/ and lib/;
# every symbol a component file exports carries that file's name as its prefix, and no prefix
# is exported by two components; a file stays near 1,000 lines and a function within two screens.
. "${srcdir:-.}/tap.sh"

top_srcdir=${FM_TOP_SRCDIR:-$(cd "${srcdir:-.}/.." && pwd)}
top_builddir=${FM_TOP_BUILDDIR:-$(cd .. && pwd)}
nm=${NM:-nm}
components="lib spank agent daemon cli"
max_file_lines=1100
max_function_lines=150
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v "$nm" >/dev/null || plan_skip_all "no nm"
plan 6

# The production sources of one component, tests left out, relative to top_srcdir.
sources () {
    (cd "$top_srcdir" && find "$1" -name '*.[ch]' -not -path '*/test/*' | sort)
}

## 1. Makefiles: nothing under a sibling component's folder
: >"$tmp/make"
for c in $components; do
    siblings=$(echo "$components" | tr ' ' '\n' | grep -vx -e "$c" -e lib | paste -sd '|')
    grep -nHE "(\\\$\(top_srcdir\)|\\\$\(top_builddir\)|\.\.)/($siblings)([/ ]|$)" \
        "$top_srcdir/$c/Makefile.am" >>"$tmp/make"
done
sed "s|^$top_srcdir/||" "$tmp/make" | while read -r l; do diag "$l"; done
ok "$([ -s "$tmp/make" ] && echo 1 || echo 0)" "no component's Makefile.am reaches into a sibling's folder"

## 2. Includes: no "../" and no sibling folder, tests included
: >"$tmp/incl"
for c in $components; do
    siblings=$(echo "$components" | tr ' ' '\n' | grep -vx -e "$c" -e lib | paste -sd '|')
    (cd "$top_srcdir" && find "$c" -name '*.[ch]' -print0 |
        xargs -0 grep -nHE "^#[[:space:]]*include[[:space:]]+\"(\.\./|($siblings)/)") >>"$tmp/incl"
done
while read -r l; do diag "$l"; done <"$tmp/incl"
ok "$([ -s "$tmp/incl" ] && echo 1 || echo 0)" "no component includes a header from a sibling's folder"

## 3. Exported symbols: fm_<file>_..., or fm_<component>_<file>_...; a file
# named fm<name> (fmclock.c, fmtime.c: a name C's or the system's headers
# would shadow) exports fm_<name>_...
# Where a name is fixed by something other than the file: Slurm's plugin
# symbols, fm_errprintf (the error convention every file uses).
allowed () {
    case "$1:$2" in
    *:main | spank/dispatch.c:slurm_spank_* | spank/dispatch.c:plugin_* | \
        spank/dispatch.c:spank_plugin_* | lib/error.c:fm_errprintf)
        return 0 ;;
    esac
    return 1
}
: >"$tmp/sym" : >"$tmp/prefixes" : >"$tmp/noobj"
for c in $components; do
    for f in $(sources "$c" | grep '\.c$'); do
        stem=$(basename "$f" .c) d=$(dirname "$f")
        obj=$(ls -t "$top_builddir/$d/.libs/$stem.o" "$top_builddir/$d/.libs/"*-"$stem.o" \
            "$top_builddir/$d/$stem.o" "$top_builddir/$d/"*-"$stem.o" 2>/dev/null | head -n 1)
        if [ -z "$obj" ]; then
            echo "$f" >>"$tmp/noobj" # not built in this configuration (no Slurm, no PMIx)
            continue
        fi
        p=fm_$(echo "$stem" | tr -- - _) q=fm_${c}_$(echo "$stem" | tr -- - _)
        case "$stem" in fm?*) p=fm_${stem#fm} ;; esac
        for s in $("$nm" --defined-only -g "$obj" | awk '$2 ~ /^[TDBRVWGS]$/ { print $3 }' |
            grep -v '^__'); do
            case "$s" in
            "$p" | "$p"_*) echo "$c $p" >>"$tmp/prefixes" ;;
            "$q" | "$q"_*) echo "$c $q" >>"$tmp/prefixes" ;;
            *) allowed "$f" "$s" || echo "$f exports $s (want ${p}_* or ${q}_*)" >>"$tmp/sym" ;;
            esac
        done
    done
done
[ -s "$tmp/noobj" ] && diag "not built here, not checked: $(paste -sd ' ' "$tmp/noobj")"
while read -r l; do diag "$l"; done <"$tmp/sym"
ok "$([ -s "$tmp/sym" ] && echo 1 || echo 0)" "every exported symbol carries its file's name"

## 4. No prefix exported by two components
sort -u "$tmp/prefixes" | awk '{ n[$2]++; c[$2] = c[$2] " " $1 }
    END { for (p in n) if (n[p] > 1) print p " exported by" c[p] }' >"$tmp/dup"
while read -r l; do diag "$l"; done <"$tmp/dup"
ok "$([ -s "$tmp/dup" ] && echo 1 || echo 0)" "no prefix is exported by two components"

## 5. Files near 1,000 lines at most
: >"$tmp/long"
for c in $components; do
    for f in $(sources "$c"); do
        n=$(wc -l <"$top_srcdir/$f")
        [ "$n" -le "$max_file_lines" ] || echo "$f: $n lines" >>"$tmp/long"
    done
done
while read -r l; do diag "$l"; done <"$tmp/long"
ok "$([ -s "$tmp/long" ] && echo 1 || echo 0)" "no source file over $max_file_lines lines"

## 6. Functions within two screens: from a definition's first line to its closing brace
: >"$tmp/fn"
for c in $components; do
    for f in $(sources "$c" | grep '\.c$'); do
        awk -v f="$f" -v max="$max_function_lines" '
            /^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ && !/^(typedef|struct|enum|union|static const|const)[[:space:]].*=/ {
                name = $0; start = NR }
            /^}/ && start { if (NR - start + 1 > max) printf "%s:%d: %s (%d lines)\n", f, start, name, NR - start + 1
                start = 0 }' "$top_srcdir/$f" >>"$tmp/fn"
    done
done
while read -r l; do diag "$l"; done <"$tmp/fn"
ok "$([ -s "$tmp/fn" ] && echo 1 || echo 0)" "no function over $max_function_lines lines"

done_testing

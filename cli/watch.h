/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CLI_WATCH_H
#define FM_CLI_WATCH_H

/* `fabricctl watch [--interval D] [--count N] [--worst N]`: a live view of the
 * fleet, redrawn (ANSI clear screen) every interval: the nodes that are not
 * healthy and the worst links. Parses its options from argv at optind (after
 * the command). Returns after --count frames or on SIGINT/SIGTERM; exits 2 on
 * a bad option. A daemon that cannot be reached is shown, not fatal, so the
 * view outlives a restart of fabricd. url: the daemon's base URL; socket: the
 * munged socket (NULL: munge's default).
 */
void fm_watch_run (const char *url, const char *socket, int argc, char **argv);

#endif /* FM_CLI_WATCH_H */

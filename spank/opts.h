/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_SPANK_OPTS_H
#define FM_SPANK_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

typedef enum {
    FM_MODE_OFF = 0,
    FM_MODE_OBSERVE,
    FM_MODE_PROTECT,
} fm_mode_t;

#define FM_SPANK_OPTION "fabric-monitor"
#define FM_SPANK_DEFAULT_DAEMON "http://127.0.0.1:8470"
#define FM_SPANK_DEFAULT_AGENT FM_SBINDIR "/fabric-agent"
#define FM_SPANK_DEFAULT_CHECK FM_BINDIR "/fabric-check"
#define FM_SPANK_DEFAULT_STATEDIR "/run/fabric-monitor"
#define FM_SPANK_RATE_MAX 500.0

/* The user's request: --fabric-monitor[=MODE][,rate=N]. */
typedef struct {
    fm_mode_t mode;
    double rate;   /* 0: the agent's default */
    bool precheck; /* ",precheck": fabric-check --quick before the job (precheck.c) */
} fm_request_t;

/* plugstack.conf arguments. */
typedef struct {
    char daemon[256];
    char agent[256];
    char munge_socket[256];
    char statedir[256];
    char check[256]; /* check=: fabric-check for precheck */
    char health_root[256]; /* agent --health-root ("" = /; %n = node) */
    fm_mode_t def;         /* mode of jobs that do not ask */
    bool failonerror;      /* prolog failures fail the job (and drain the node) */
} fm_spank_conf_t;

const char *fm_opts_mode_name (fm_mode_t mode);

/* Parse the option argument (NULL or "" means observe). "MODE",
 * "MODE,rate=N", "rate=N" (observe). -1/EINVAL with a message for the user.
 */
int fm_opts_request_parse (const char *arg, fm_request_t *req, fm_error_t *err);

/* Parse plugstack arguments into conf (defaults first). Unknown or bad
 * arguments: -1/EINVAL with err naming the argument; conf is then unchanged.
 */
int fm_opts_conf_parse (int ac, char **av, fm_spank_conf_t *conf, fm_error_t *err);

#endif /* FM_SPANK_OPTS_H */

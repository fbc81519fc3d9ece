/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_SPANK_TEST_STUBS_H
#define FM_SPANK_TEST_STUBS_H

/* Stand-ins for the symbols slurmd, slurmstepd and the client commands
 * provide to a loaded plugin, programmable through `stub`. Include in one
 * file per test program.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <slurm/spank.h>

#define STUB_MAX 64

static struct {
    spank_context_t ctx;
    uint32_t job_id;
    uint32_t step_id;
    uint32_t task_id;
    uid_t uid;
    gid_t gid;
    bool no_items;
    bool opt_given;
    const char *optarg;
    int registered;
    struct spank_option *option;
    int nenv;
    char env[STUB_MAX][2][512];
    int nlog;
    char log[STUB_MAX][512];
} stub;

spank_context_t spank_context (void)
{
    return stub.ctx;
}

spank_err_t spank_option_register (spank_t sp, struct spank_option *opt)
{
    stub.registered++;
    stub.option = opt;
    return ESPANK_SUCCESS;
}

spank_err_t spank_option_getopt (spank_t sp, struct spank_option *opt, char **arg)
{
    if (stub.ctx != S_CTX_JOB_SCRIPT && stub.ctx != S_CTX_REMOTE) {
        return ESPANK_NOT_AVAIL;
    }
    if (!stub.opt_given) {
        return ESPANK_ERROR;
    }
    *arg = (char *)stub.optarg;
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item (spank_t sp, spank_item_t item, ...)
{
    va_list ap;
    spank_err_t rc = ESPANK_SUCCESS;

    if (stub.no_items) {
        return ESPANK_NOT_AVAIL;
    }
    va_start (ap, item);
    switch (item) {
    case S_JOB_ID:
        *va_arg (ap, uint32_t *) = stub.job_id;
        break;
    case S_JOB_STEPID:
        *va_arg (ap, uint32_t *) = stub.step_id;
        break;
    case S_TASK_GLOBAL_ID:
        *va_arg (ap, uint32_t *) = stub.task_id;
        break;
    case S_JOB_UID:
        *va_arg (ap, uid_t *) = stub.uid;
        break;
    case S_JOB_GID:
        *va_arg (ap, gid_t *) = stub.gid;
        break;
    default:
        rc = ESPANK_BAD_ARG;
    }
    va_end (ap);
    return rc;
}

spank_err_t spank_setenv (spank_t sp, const char *var, const char *val, int overwrite)
{
    if (stub.nenv == STUB_MAX) {
        return ESPANK_ERROR;
    }
    snprintf (stub.env[stub.nenv][0], 512, "%s", var);
    snprintf (stub.env[stub.nenv][1], 512, "%s", val);
    stub.nenv++;
    return ESPANK_SUCCESS;
}

spank_err_t spank_getenv (spank_t sp, const char *var, char *buf, int len)
{
    const char *v = getenv (var);

    if (!v) {
        return ESPANK_ENV_NOEXIST;
    }
    if ((int)strlen (v) >= len) {
        return ESPANK_NOSPACE;
    }
    strcpy (buf, v);
    return ESPANK_SUCCESS;
}

__attribute__ ((unused)) static const char *stub_env (const char *var)
{
    for (int i = stub.nenv - 1; i >= 0; i--) {
        if (strcmp (stub.env[i][0], var) == 0) {
            return stub.env[i][1];
        }
    }
    return NULL;
}

__attribute__ ((format (printf, 2, 0))) static void
stub_log (const char *level, const char *fmt, va_list ap)
{
    char msg[400];

    vsnprintf (msg, sizeof (msg), fmt, ap);
    if (stub.nlog < STUB_MAX) {
        snprintf (stub.log[stub.nlog++], 512, "%s: %s", level, msg);
    }
}

/* Whether some logged line contains s. */
__attribute__ ((unused)) static bool stub_logged (const char *s)
{
    for (int i = 0; i < stub.nlog; i++) {
        if (strstr (stub.log[i], s)) {
            return true;
        }
    }
    return false;
}

#define STUB_LOGGER(fn, level)                                                         \
    void fn (const char *fmt, ...)                                                     \
    {                                                                                  \
        va_list ap;                                                                    \
        va_start (ap, fmt);                                                            \
        stub_log (level, fmt, ap);                                                     \
        va_end (ap);                                                                   \
    }

STUB_LOGGER (slurm_error, "error")
STUB_LOGGER (slurm_info, "info")
STUB_LOGGER (slurm_verbose, "verbose")
STUB_LOGGER (slurm_debug, "debug")

#endif /* FM_SPANK_TEST_STUBS_H */

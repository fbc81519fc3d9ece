/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plugin.h"

fm_plugin_t fm_plugin;

static int option_cb (int val, const char *arg, int remote)
{
    fm_request_t req;
    fm_error_t err;

    /* Slurm passes an option given without argument on to the job's steps as
     * the string "(null)" (SLURM_SPANK__SLURM_SPANK_OPTION_* in the job's
     * environment), and every srun inside the job parses it again.
     */
    if (arg && strcmp (arg, "(null)") == 0) {
        arg = NULL;
    }
    if (fm_opts_request_parse (arg, &req, &err) < 0) {
        if (remote) {
            /* validated at submission; a job must never fail here */
            fm_spank_verbose ("%s; monitoring disabled", err.text);
            fm_plugin.opt_seen = true;
            fm_plugin.opt_valid = false;
            return 0;
        }
        slurm_error ("%s", err.text);
        return -1;
    }
    fm_plugin.opt_seen = true;
    fm_plugin.opt_valid = true;
    fm_plugin.req = req;
    return 0;
}

static struct spank_option option = {
    .name = FM_SPANK_OPTION,
    .arginfo = "[MODE][,rate=N]",
    .usage =
        "[fabric-monitor] probe the network between the job's nodes and append a "
        "summary to the job's output. MODE: observe (default), protect (let "
        "fabricd requeue the job off a failing node) or off; rate=N probes/s per peer",
    .has_arg = 2,
    .val = 0,
    .cb = option_cb,
};

static void parse_conf (int ac, char **av)
{
    fm_error_t err;
    spank_context_t ctx = spank_context ();

    memset (&fm_plugin, 0, sizeof (fm_plugin));
    fm_plugin.setup_done = true;
    if (fm_opts_conf_parse (ac, av, &fm_plugin.conf, &err) < 0) {
        /* a site error: say so loudly where admins look, but stay inert
         * rather than break every job
         */
        if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR) {
            fm_spank_err ("%s; plugin disabled", err.text);
        }
    } else {
        fm_plugin.ready = true;
    }
}

void fm_plugin_setup_conf (int ac, char **av)
{
    if (!fm_plugin.setup_done) {
        parse_conf (ac, av);
    }
}

int fm_plugin_setup (spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context ();

    parse_conf (ac, av);
    /* registered even when inert, so that job scripts using the option keep
     * working while the site fixes its configuration
     */
    if (spank_option_register (sp, &option) != ESPANK_SUCCESS) {
        /* e.g. another plugin took the name: the option is then unknown to
         * the user, which is the user-facing error; never fail srun for it
         */
        if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR) {
            fm_spank_err ("cannot register --%s", FM_SPANK_OPTION);
        }
    }
    return 0;
}

fm_request_t fm_plugin_request (spank_t sp)
{
    fm_request_t req = {.mode = fm_plugin.conf.def};
    fm_error_t err;

    if (spank_context () == S_CTX_JOB_SCRIPT) {
        char *arg = NULL;
        if (spank_option_getopt (sp, &option, &arg) == ESPANK_SUCCESS) {
            /* Slurm hands "(null)" through for an option given without argument */
            if (arg && strcmp (arg, "(null)") == 0) {
                arg = NULL;
            }
            if (fm_opts_request_parse (arg, &req, &err) < 0) {
                fm_spank_verbose ("%s; monitoring disabled", err.text);
                req = (fm_request_t){.mode = FM_MODE_OFF};
            }
        }
        return req;
    }
    if (fm_plugin.opt_seen) {
        return fm_plugin.opt_valid ? fm_plugin.req
                                   : (fm_request_t){.mode = FM_MODE_OFF};
    }
    return req;
}

int fm_plugin_nodedir (const char *node, char *buf, size_t size)
{
    int n;

    if (!node || !node[0] || strlen (node) > 63 || strchr (node, '/')
        || node[0] == '.') {
        errno = EINVAL;
        return -1;
    }
    n = snprintf (buf, size, "%s/%s", fm_plugin.conf.statedir, node);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int fm_plugin_jobdir (const char *node, uint32_t job_id, char *buf, size_t size)
{
    char dir[512];
    int n;

    if (fm_plugin_nodedir (node, dir, sizeof (dir)) < 0) {
        return -1;
    }
    n = snprintf (buf, size, "%s/job.%u", dir, job_id);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

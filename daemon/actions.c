/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actions.h"
#include "hostlist.h"
#include "log.h"
#include "policy.h"

struct fm_actions {
    const fm_actions_ops_t *ops;
    void *impl;
    bool dry_run;
};

/* One node, as a NodeName= argument: a hostlist expression or a name with '='
 * or spaces would act on other nodes than the caller meant.
 */
static int check_node (const char *node, fm_error_t *err)
{
    size_t n;

    if (!node || !(n = strlen (node)) || n >= FM_ACTIONS_NODE_NAME_MAX) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid node name");
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)node[i];
        if (!isalnum (c) && c != '-' && c != '_' && c != '.') {
            errno = EINVAL;
            return fm_errprintf (err, "invalid character in node name '%s'", node);
        }
    }
    return 0;
}

static int check_job (int64_t job_id, fm_error_t *err)
{
    if (job_id <= 0 || job_id > UINT32_MAX - 1) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid job id %" PRId64, job_id);
    }
    return 0;
}

fm_actions_t *
fm_actions_create (const char *kind, const fm_actions_opts_t *opts, fm_error_t *err)
{
    static const fm_actions_opts_t defaults;
    const fm_actions_ops_t *ops;
    fm_actions_t *a;

    if (!opts) {
        opts = &defaults;
    }
    if (!kind) {
        errno = EINVAL;
        fm_errprintf (err, "no actions backend named");
        return NULL;
    }
    if (!strcmp (kind, "scontrol")) {
        ops = &fm_actions_scontrol_ops;
    } else if (!strcmp (kind, "libslurm") || !strcmp (kind, "auto")) {
#if HAVE_LIBSLURM
        ops = &fm_actions_libslurm_ops;
#else
        if (!strcmp (kind, "libslurm")) {
            errno = ENOTSUP;
            fm_errprintf (err, "this fabricd was built without libslurm");
            return NULL;
        }
        ops = &fm_actions_scontrol_ops;
#endif
    } else {
        errno = EINVAL;
        fm_errprintf (
            err, "unknown actions backend '%s' (libslurm, scontrol, auto)", kind);
        return NULL;
    }
    if (opts->slurm_conf && access (opts->slurm_conf, R_OK) < 0) {
        int e = errno;
        fm_errprintf (err, "%s: %s", opts->slurm_conf, strerror (e));
        errno = e;
        return NULL;
    }
    if (!(a = calloc (1, sizeof (*a)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    a->ops = ops;
    a->dry_run = opts->dry_run;
    a->impl = ops->create (opts, err);
    if (!a->impl && errno == ENOENT && !strcmp (kind, "auto")
        && ops != &fm_actions_scontrol_ops) {
        fm_info ("actions: %s; using scontrol", err ? err->text : "no slurm.conf");
        a->ops = ops = &fm_actions_scontrol_ops;
        fm_error_clear (err);
        a->impl = ops->create (opts, err);
    }
    if (!a->impl) {
        int e = errno;
        free (a);
        errno = e;
        return NULL;
    }
    return a;
}

void fm_actions_destroy (fm_actions_t *a)
{
    if (a) {
        int e = errno;
        a->ops->destroy (a->impl);
        free (a);
        errno = e;
    }
}

const char *fm_actions_kind (const fm_actions_t *a)
{
    return a->ops->name;
}

const char *fm_actions_result_name (int result)
{
    switch (result) {
    case FM_ACTIONS_DONE:
        return "done";
    case FM_ACTIONS_ALREADY:
        return "already";
    case FM_ACTIONS_FOREIGN:
        return "foreign";
    }
    return "error";
}

int fm_actions_node_info (fm_actions_t *a,
                          const char *node,
                          fm_node_info_t *info,
                          fm_error_t *err)
{
    fm_node_info_t *v = NULL;
    size_t n = 0;

    if (!a || !info) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (check_node (node, err) < 0) {
        return -1;
    }
    if (a->ops->nodes_load (a->impl, node, &v, &n, err) < 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp (v[i].name, node)) {
            *info = v[i];
            free (v);
            return 0;
        }
    }
    free (v);
    errno = ENOENT;
    return fm_errprintf (err, "Node %s not found", node);
}

int fm_actions_nodes_list (fm_actions_t *a,
                           fm_node_info_t **nodes,
                           size_t *count,
                           fm_error_t *err)
{
    if (!a || !nodes || !count) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    return a->ops->nodes_load (a->impl, NULL, nodes, count, err);
}

int fm_actions_drain (fm_actions_t *a,
                      const char *node,
                      const char *reason,
                      fm_error_t *err)
{
    char r[FM_ACTIONS_REASON_MAX];
    fm_node_info_t info;

    if (!a || !reason) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (fm_actions_reason_format (reason, r, sizeof (r)) < 0
        || !fm_policy_reason_ours (r)) {
        errno = EINVAL;
        return fm_errprintf (
            err, "a drain reason must start with '%s'", FM_POLICY_REASON_PREFIX);
    }
    if (fm_actions_node_info (a, node, &info, err) < 0) {
        return -1;
    }
    if (info.reason[0] && !fm_policy_reason_ours (info.reason)) {
        fm_info ("actions: not draining %s: it carries another reason: %s",
                 node,
                 info.reason);
        return FM_ACTIONS_FOREIGN;
    }
    if ((info.state & FM_NODE_DRAIN) && info.reason[0]) {
        return FM_ACTIONS_ALREADY;
    }
    if (a->dry_run) {
        fm_notice ("actions: dry-run: would drain %s reason \"%s\"", node, r);
        return FM_ACTIONS_DONE;
    }
    if (a->ops->node_update (a->impl, node, FM_NODE_UPDATE_DRAIN, r, 0, err) < 0) {
        return -1;
    }
    fm_notice ("actions: drained %s reason \"%s\"", node, r);
    return FM_ACTIONS_DONE;
}

static int resume (fm_actions_t *a, const char *node, bool force, fm_error_t *err)
{
    fm_node_info_t info;

    if (!a) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (fm_actions_node_info (a, node, &info, err) < 0) {
        return -1;
    }
    if (!(info.state & (FM_NODE_DRAIN | FM_NODE_DOWN | FM_NODE_FAIL))) {
        return FM_ACTIONS_ALREADY;
    }
    if (!force && !fm_policy_reason_ours (info.reason)) {
        errno = EPERM;
        return fm_errprintf (err,
                             "not resuming %s: its reason is not ours: %s",
                             node,
                             info.reason[0] ? info.reason : "(none)");
    }
    if (a->dry_run) {
        fm_notice ("actions: dry-run: would resume %s (was: %s)", node, info.reason);
        return FM_ACTIONS_DONE;
    }
    if (a->ops->node_update (a->impl, node, FM_NODE_UPDATE_RESUME, NULL, 0, err) < 0) {
        return -1;
    }
    fm_notice ("actions: resumed %s%s (was: %s)",
               node,
               force && !fm_policy_reason_ours (info.reason) ? " by force" : "",
               info.reason);
    return FM_ACTIONS_DONE;
}

int fm_actions_resume (fm_actions_t *a, const char *node, fm_error_t *err)
{
    return resume (a, node, false, err);
}

int fm_actions_resume_force (fm_actions_t *a, const char *node, fm_error_t *err)
{
    return resume (a, node, true, err);
}

int fm_actions_set_weight (fm_actions_t *a,
                           const char *node,
                           int64_t weight,
                           fm_error_t *err)
{
    fm_node_info_t info;

    if (!a) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    /* UINT32_MAX is Slurm's NO_VAL: "leave unchanged". */
    if (weight < 1 || weight >= UINT32_MAX) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid weight %" PRId64, weight);
    }
    if (fm_actions_node_info (a, node, &info, err) < 0) {
        return -1;
    }
    if (info.weight == weight) {
        return FM_ACTIONS_ALREADY;
    }
    if (a->dry_run) {
        fm_notice ("actions: dry-run: would set weight of %s to %" PRId64
                   " (was %" PRId64 ")",
                   node,
                   weight,
                   info.weight);
        return FM_ACTIONS_DONE;
    }
    if (a->ops->node_update (a->impl, node, FM_NODE_UPDATE_WEIGHT, NULL, weight, err)
        < 0) {
        return -1;
    }
    fm_notice ("actions: set weight of %s to %" PRId64 " (was %" PRId64 ")",
               node,
               weight,
               info.weight);
    return FM_ACTIONS_DONE;
}

int fm_actions_job_info (fm_actions_t *a,
                         int64_t job_id,
                         fm_job_info_t *info,
                         fm_error_t *err)
{
    fm_job_info_t *v = NULL;
    size_t n = 0;

    if (!a || !info) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (check_job (job_id, err) < 0) {
        return -1;
    }
    if (a->ops->jobs_load (a->impl, job_id, &v, &n, err) < 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].job_id == job_id) {
            *info = v[i];
            v[i].nodes = NULL;
            fm_actions_job_info_free (v, n);
            return 0;
        }
    }
    fm_actions_job_info_free (v, n);
    errno = ESRCH;
    return fm_errprintf (err, "Invalid job id specified: %" PRId64, job_id);
}

static bool job_live (const fm_job_info_t *j)
{
    return j->state == FM_JOB_RUNNING || j->state == FM_JOB_SUSPENDED;
}

int fm_actions_signal_job (
    fm_actions_t *a, int64_t job_id, int sig, bool batch_only, fm_error_t *err)
{
    fm_job_info_t info;
    bool live;

    if (!a) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (sig <= 0 || sig > 64) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid signal %d", sig);
    }
    if (fm_actions_job_info (a, job_id, &info, err) < 0) {
        return -1;
    }
    live = job_live (&info);
    fm_actions_job_info_clear (&info);
    if (!live) {
        errno = ESRCH;
        return fm_errprintf (err, "job %" PRId64 " is %s", job_id, info.state_name);
    }
    if (a->dry_run) {
        fm_notice ("actions: dry-run: would send signal %d to job %" PRId64 "%s",
                   sig,
                   job_id,
                   batch_only ? " (batch shell)" : "");
        return FM_ACTIONS_DONE;
    }
    if (a->ops->job_signal (a->impl, job_id, sig, batch_only, err) < 0) {
        return -1;
    }
    fm_notice ("actions: sent signal %d to job %" PRId64 "%s",
               sig,
               job_id,
               batch_only ? " (batch shell)" : "");
    return FM_ACTIONS_DONE;
}

int fm_actions_requeue (fm_actions_t *a, int64_t job_id, fm_error_t *err)
{
    fm_job_info_t info;

    if (!a) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (fm_actions_job_info (a, job_id, &info, err) < 0) {
        return -1;
    }
    fm_actions_job_info_clear (&info);
    if (info.state == FM_JOB_PENDING) {
        return FM_ACTIONS_ALREADY;
    }
    if (!job_live (&info)) {
        errno = ESRCH;
        return fm_errprintf (err, "job %" PRId64 " is %s", job_id, info.state_name);
    }
    if (!info.requeue) {
        errno = EPERM;
        return fm_errprintf (err, "job %" PRId64 " does not allow requeue", job_id);
    }
    if (a->dry_run) {
        fm_notice ("actions: dry-run: would requeue job %" PRId64, job_id);
        return FM_ACTIONS_DONE;
    }
    if (a->ops->job_requeue (a->impl, job_id, err) < 0) {
        return -1;
    }
    fm_notice ("actions: requeued job %" PRId64, job_id);
    return FM_ACTIONS_DONE;
}

int fm_actions_jobs_on_node (fm_actions_t *a,
                             const char *node,
                             fm_job_info_t **jobs,
                             size_t *count,
                             fm_error_t *err)
{
    fm_job_info_t *v = NULL;
    size_t n = 0, k = 0;

    if (!a || !jobs || !count) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (check_node (node, err) < 0) {
        return -1;
    }
    if (a->ops->jobs_load (a->impl, 0, &v, &n, err) < 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        fm_hostlist_t *hl = NULL;
        bool here = false;

        if (job_live (&v[i]) && v[i].nodes[0]) {
            if (!(hl = fm_hostlist_expand (v[i].nodes, 0, err))) {
                int e = errno;
                fm_actions_job_info_free (v, n);
                errno = e;
                return -1;
            }
            here = fm_hostlist_find (hl, node) >= 0;
            fm_hostlist_destroy (hl);
        }
        if (here) {
            fm_job_info_t t = v[k];
            v[k++] = v[i];
            v[i] = t;
        }
    }
    for (size_t i = k; i < n; i++) {
        fm_actions_job_info_clear (&v[i]);
    }
    if (k == 0) {
        free (v);
        v = NULL;
    }
    *jobs = v;
    *count = k;
    return 0;
}

void fm_actions_job_info_clear (fm_job_info_t *info)
{
    if (info) {
        free (info->nodes);
        info->nodes = NULL;
    }
}

void fm_actions_job_info_free (fm_job_info_t *jobs, size_t count)
{
    if (jobs) {
        int e = errno;
        for (size_t i = 0; i < count; i++) {
            fm_actions_job_info_clear (&jobs[i]);
        }
        free (jobs);
        errno = e;
    }
}

int fm_actions_reason_format (const char *in, char *out, size_t size)
{
    size_t o = 0;
    bool space = false;

    if (!in || !out || size < 2) {
        errno = EINVAL;
        return -1;
    }
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        unsigned char c = *p;

        if (c < 0x20 || c == 0x7f || c == ' ') {
            space = o > 0;
            continue;
        }
        if (c == '"') {
            c = '\'';
        }
        /* Room for a pending space and the whole UTF-8 sequence starting here. */
        size_t len = 1;
        if (c >= 0xc0) {
            while ((p[len] & 0xc0) == 0x80 && len < 4) {
                len++;
            }
        }
        if (o + (space ? 1 : 0) + len > size - 1) {
            break;
        }
        if (space) {
            out[o++] = ' ';
            space = false;
        }
        out[o++] = (char)c;
        for (size_t i = 1; i < len; i++) {
            out[o++] = (char)p[i];
        }
        p += len - 1;
    }
    out[o] = '\0';
    if (o == 0) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

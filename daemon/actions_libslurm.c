/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "actions.h"

/* libslurm keeps one configuration per process: slurm_init() once, with the
 * first handle's slurm_conf, and every later handle must name the same one.
 */
static bool initialised;
static char *init_conf;

typedef struct {
    int unused;
} ls_t;

static int slurm_errno_map (int rc)
{
    switch (rc) {
    case SLURM_COMMUNICATIONS_CONNECTION_ERROR:
    case SLURM_COMMUNICATIONS_SEND_ERROR:
    case SLURM_COMMUNICATIONS_RECEIVE_ERROR:
    case SLURM_COMMUNICATIONS_SHUTDOWN_ERROR:
    case SLURM_PROTOCOL_AUTHENTICATION_ERROR:
    case SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR:
    case SLURMCTLD_COMMUNICATIONS_SEND_ERROR:
    case SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR:
    case SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR:
    case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
    case SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT:
    case SLURM_PROTOCOL_SOCKET_IMPL_ZERO_RECV_LENGTH:
    case ESLURM_IN_STANDBY_MODE:
    case ESLURM_IN_STANDBY_USE_BACKUP:
    case ESLURM_TRANSITION_STATE_NO_UPDATE:
    case EAGAIN:
    case ETIMEDOUT:
    case ECONNREFUSED:
        return EAGAIN;
    case ESLURM_INVALID_NODE_NAME:
        return ENOENT;
    case ESLURM_INVALID_JOB_ID:
    case ESLURM_ALREADY_DONE:
    case ESLURM_JOB_PENDING:
    case ESLURM_JOB_NOT_RUNNING:
        return ESRCH;
    case ESLURM_ACCESS_DENIED:
    case ESLURM_USER_ID_MISSING:
    case ESLURM_DISABLED:
    case ESLURM_BATCH_ONLY:
        return EPERM;
    case ESLURM_INVALID_NODE_STATE:
        return EINVAL;
    }
    return EIO;
}

static int fail (const char *what, fm_error_t *err)
{
    int rc = slurm_get_errno ();
    int e = slurm_errno_map (rc);

    fm_errprintf (err, "%s: %s", what, slurm_strerror (rc));
    errno = e;
    return -1;
}

static void ls_destroy (void *impl)
{
    if (impl) {
        free (impl);
        /* slurm_fini() would break other handles and cannot be undone by a
         * second slurm_init() in 22.05: keep the configuration until exit.
         */
    }
}

/* slurm_init() calls fatal() (exits the process) when it finds no usable
 * configuration: look for the file it would read first, so that a host
 * without one gets ENOENT (and "auto" falls back to scontrol). A file that
 * exists but does not parse still ends the process, from libslurm.
 */
static int conf_found (const char *conf, fm_error_t *err)
{
    static const char *const defaults[] = {"/etc/slurm/slurm.conf",
                                           "/run/slurm/conf/slurm.conf"};
    const char *env = getenv ("SLURM_CONF");

    if (conf) {
        return 0;
    }
    if (env && *env) {
        if (access (env, R_OK) == 0) {
            return 0;
        }
        int e = errno;
        fm_errprintf (err, "SLURM_CONF=%s: %s", env, strerror (e));
        errno = e;
        return -1;
    }
    for (size_t i = 0; i < sizeof (defaults) / sizeof (defaults[0]); i++) {
        if (access (defaults[i], R_OK) == 0) {
            return 0;
        }
    }
    errno = ENOENT;
    return fm_errprintf (err,
                         "libslurm: no slurm.conf (%s, %s, SLURM_CONF): set "
                         "slurm_conf",
                         defaults[0],
                         defaults[1]);
}

static void *ls_create (const fm_actions_opts_t *opts, fm_error_t *err)
{
    ls_t *ls;
    const char *conf = opts->slurm_conf;

    if (initialised) {
        if ((conf == NULL) != (init_conf == NULL)
            || (conf && strcmp (conf, init_conf))) {
            errno = EBUSY;
            fm_errprintf (err,
                          "libslurm is already initialised with %s",
                          init_conf ? init_conf : "the default slurm.conf");
            return NULL;
        }
    }
    if (!initialised && conf_found (conf, err) < 0) {
        return NULL;
    }
    if (!(ls = calloc (1, sizeof (*ls)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    if (!initialised) {
        if (conf && !(init_conf = strdup (conf))) {
            free (ls);
            errno = ENOMEM;
            fm_errprintf (err, "out of memory");
            return NULL;
        }
        slurm_init (conf);
        initialised = true;
    }
    return ls;
}

static unsigned node_state (uint32_t s)
{
    unsigned st = 0;

    switch (s & NODE_STATE_BASE) {
    case NODE_STATE_IDLE:
        st |= FM_NODE_IDLE;
        break;
    case NODE_STATE_ALLOCATED:
        st |= FM_NODE_ALLOC;
        break;
    case NODE_STATE_MIXED:
        st |= FM_NODE_MIXED;
        break;
    case NODE_STATE_DOWN:
        st |= FM_NODE_DOWN;
        break;
    case NODE_STATE_FUTURE:
        st |= FM_NODE_FUTURE;
        break;
    default:
        st |= FM_NODE_UNKNOWN;
        break;
    }
    if (s & NODE_STATE_DRAIN) {
        st |= FM_NODE_DRAIN;
    }
    if (s & NODE_STATE_FAIL) {
        st |= FM_NODE_FAIL;
    }
    if (s & NODE_STATE_COMPLETING) {
        st |= FM_NODE_COMPLETING;
    }
    if (s & NODE_STATE_NO_RESPOND) {
        st |= FM_NODE_NO_RESPOND;
    }
    if (s & NODE_STATE_MAINT) {
        st |= FM_NODE_MAINT;
    }
    if (s & NODE_STATE_RES) {
        st |= FM_NODE_RESERVED;
    }
    return st;
}

static int ls_nodes_load (void *impl,
                          const char *node,
                          fm_node_info_t **nodes,
                          size_t *count,
                          fm_error_t *err)
{
    node_info_msg_t *msg = NULL;
    fm_node_info_t *v;
    size_t k = 0;
    int rc;

    (void)impl;
    if (node) {
        rc = slurm_load_node_single (&msg, (char *)node, SHOW_ALL);
    } else {
        rc = slurm_load_node ((time_t)0, &msg, SHOW_ALL);
    }
    if (rc != SLURM_SUCCESS) {
        return fail ("slurm_load_node", err);
    }
    if (node && msg->record_count == 0) {
        slurm_free_node_info_msg (msg);
        errno = ENOENT;
        return fm_errprintf (err, "Node %s not found", node);
    }
    if (!(v = calloc (msg->record_count ? msg->record_count : 1, sizeof (*v)))) {
        slurm_free_node_info_msg (msg);
        return fm_errprintf (err, "out of memory");
    }
    for (uint32_t i = 0; i < msg->record_count; i++) {
        node_info_t *n = &msg->node_array[i];

        /* Holes in the table (removed dynamic nodes) have no name. */
        if (!n->name || strlen (n->name) >= sizeof (v[k].name)) {
            continue;
        }
        strcpy (v[k].name, n->name);
        v[k].state = node_state (n->node_state);
        snprintf (v[k].reason, sizeof (v[k].reason), "%s", n->reason ? n->reason : "");
        v[k].weight = n->weight;
        k++;
    }
    slurm_free_node_info_msg (msg);
    if (node && k == 0) {
        free (v);
        errno = ENOENT;
        return fm_errprintf (err, "Node %s not found", node);
    }
    *nodes = v;
    *count = k;
    return 0;
}

static int ls_node_update (void *impl,
                           const char *node,
                           fm_node_update_t what,
                           const char *reason,
                           int64_t weight,
                           fm_error_t *err)
{
    update_node_msg_t m;

    (void)impl;
    slurm_init_update_node_msg (&m);
    m.node_names = (char *)node;
    switch (what) {
    case FM_NODE_UPDATE_DRAIN:
        m.node_state = NODE_STATE_DRAIN;
        m.reason = (char *)reason;
        /* Slurm records the sender as the reason's owner only when told. */
        m.reason_uid = (uint32_t)getuid ();
        break;
    case FM_NODE_UPDATE_RESUME:
        m.node_state = NODE_RESUME;
        break;
    case FM_NODE_UPDATE_WEIGHT:
        m.weight = (uint32_t)weight;
        break;
    }
    if (slurm_update_node (&m) != SLURM_SUCCESS) {
        return fail ("slurm_update_node", err);
    }
    return 0;
}

/* The names scontrol prints (slurm_job_state_string() is not in 22.05's
 * headers).
 */
static const char *job_state_name (uint32_t base)
{
    static const char *const names[] = {
        [JOB_PENDING] = "PENDING",
        [JOB_RUNNING] = "RUNNING",
        [JOB_SUSPENDED] = "SUSPENDED",
        [JOB_COMPLETE] = "COMPLETED",
        [JOB_CANCELLED] = "CANCELLED",
        [JOB_FAILED] = "FAILED",
        [JOB_TIMEOUT] = "TIMEOUT",
        [JOB_NODE_FAIL] = "NODE_FAIL",
        [JOB_PREEMPTED] = "PREEMPTED",
        [JOB_BOOT_FAIL] = "BOOT_FAIL",
        [JOB_DEADLINE] = "DEADLINE",
        [JOB_OOM] = "OUT_OF_MEMORY",
    };

    if (base < sizeof (names) / sizeof (names[0]) && names[base]) {
        return names[base];
    }
    return "UNKNOWN";
}

static void job_state (uint32_t s, fm_job_info_t *j)
{
    uint32_t base = s & JOB_STATE_BASE;

    switch (base) {
    case JOB_PENDING:
        j->state = FM_JOB_PENDING;
        break;
    case JOB_RUNNING:
        j->state = FM_JOB_RUNNING;
        break;
    case JOB_SUSPENDED:
        j->state = FM_JOB_SUSPENDED;
        break;
    default:
        j->state = FM_JOB_ENDED;
        break;
    }
    /* A job being requeued is PENDING with COMPLETING; a finishing one keeps
     * its final state with COMPLETING.
     */
    j->completing = (s & JOB_COMPLETING) != 0;
    snprintf (j->state_name, sizeof (j->state_name), "%s", job_state_name (base));
}

static int ls_jobs_load (
    void *impl, int64_t job_id, fm_job_info_t **jobs, size_t *count, fm_error_t *err)
{
    job_info_msg_t *msg = NULL;
    fm_job_info_t *v;
    int rc;

    (void)impl;
    if (job_id) {
        rc = slurm_load_job (&msg, (uint32_t)job_id, SHOW_ALL);
    } else {
        rc = slurm_load_jobs ((time_t)0, &msg, SHOW_ALL);
    }
    if (rc != SLURM_SUCCESS) {
        return fail ("slurm_load_job", err);
    }
    if (!(v = calloc (msg->record_count ? msg->record_count : 1, sizeof (*v)))) {
        slurm_free_job_info_msg (msg);
        return fm_errprintf (err, "out of memory");
    }
    for (uint32_t i = 0; i < msg->record_count; i++) {
        slurm_job_info_t *j = &msg->job_array[i];

        v[i].job_id = j->job_id;
        job_state (j->job_state, &v[i]);
        v[i].requeue = j->requeue != 0;
        v[i].restarts = j->restart_cnt;
        snprintf (v[i].batch_host,
                  sizeof (v[i].batch_host),
                  "%s",
                  j->batch_host ? j->batch_host : "");
        if (!(v[i].nodes = strdup (j->nodes ? j->nodes : ""))) {
            fm_actions_job_info_free (v, i);
            slurm_free_job_info_msg (msg);
            errno = ENOMEM;
            return fm_errprintf (err, "out of memory");
        }
    }
    *count = msg->record_count;
    *jobs = v;
    slurm_free_job_info_msg (msg);
    return 0;
}

static int
ls_job_signal (void *impl, int64_t job_id, int sig, bool batch_only, fm_error_t *err)
{
    (void)impl;
    if (slurm_kill_job (
            (uint32_t)job_id, (uint16_t)sig, batch_only ? KILL_JOB_BATCH : 0)
        != SLURM_SUCCESS) {
        return fail ("slurm_kill_job", err);
    }
    return 0;
}

static int ls_job_requeue (void *impl, int64_t job_id, fm_error_t *err)
{
    (void)impl;
    if (slurm_requeue ((uint32_t)job_id, 0) != SLURM_SUCCESS) {
        return fail ("slurm_requeue", err);
    }
    return 0;
}

const fm_actions_ops_t fm_actions_libslurm_ops = {
    .name = "libslurm",
    .create = ls_create,
    .destroy = ls_destroy,
    .nodes_load = ls_nodes_load,
    .node_update = ls_node_update,
    .jobs_load = ls_jobs_load,
    .job_signal = ls_job_signal,
    .job_requeue = ls_job_requeue,
};

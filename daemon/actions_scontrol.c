/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actions.h"

extern char **environ;

/* Output caps: `show node`/`show job` for a large cluster run to megabytes;
 * anything beyond this is not Slurm talking to us.
 */
#define OUT_MAX (32u << 20)
#define ERR_MAX 4096u

typedef struct {
    char *conf_env; /* "SLURM_CONF=..." or NULL */
    char *scontrol;
    char *scancel;
    int timeout_ms;
} sc_t;

typedef struct {
    char *data;
    size_t len, cap, max;
    bool truncated;
} buf_t;

static void sc_destroy (void *impl)
{
    sc_t *sc = impl;

    if (sc) {
        free (sc->conf_env);
        free (sc->scontrol);
        free (sc->scancel);
        free (sc);
    }
}

static void *sc_create (const fm_actions_opts_t *opts, fm_error_t *err)
{
    sc_t *sc = calloc (1, sizeof (*sc));

    if (!sc) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    sc->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
    if ((opts->slurm_conf
         && asprintf (&sc->conf_env, "SLURM_CONF=%s", opts->slurm_conf) < 0)
        || !(sc->scontrol = strdup (opts->scontrol ? opts->scontrol : "scontrol"))
        || !(sc->scancel = strdup (opts->scancel ? opts->scancel : "scancel"))) {
        sc->conf_env = NULL;
        sc_destroy (sc);
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    return sc;
}

static int buf_read (buf_t *b, int fd)
{
    char tmp[65536];
    ssize_t n = read (fd, tmp, sizeof (tmp));

    if (n <= 0) {
        return n < 0 && (errno == EINTR || errno == EAGAIN) ? 1 : 0;
    }
    size_t take = (size_t)n;
    if (b->len + take > b->max) {
        take = b->max - b->len;
        b->truncated = true;
    }
    if (b->len + take + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 8192;
        while (cap < b->len + take + 1) {
            cap *= 2;
        }
        char *d = realloc (b->data, cap);
        if (!d) {
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy (b->data + b->len, tmp, take);
    b->len += take;
    b->data[b->len] = '\0';
    return 1;
}

static int64_t now_ms (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The environment with SLURM_CONF replaced, built before spawning. */
static char **child_env (const sc_t *sc)
{
    size_t n = 0, k = 0;
    char **env;

    while (environ[n]) {
        n++;
    }
    if (!(env = calloc (n + 2, sizeof (*env)))) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!sc->conf_env || strncmp (environ[i], "SLURM_CONF=", 11) != 0) {
            env[k++] = environ[i];
        }
    }
    if (sc->conf_env) {
        env[k++] = sc->conf_env;
    }
    env[k] = NULL;
    return env;
}

/* The last non-empty line of s, in buf. */
static const char *last_line (const char *s, char *buf, size_t size)
{
    const char *end = s + strlen (s);

    while (end > s && (end[-1] == '\n' || end[-1] == ' ')) {
        end--;
    }
    const char *start = end;
    while (start > s && start[-1] != '\n') {
        start--;
    }
    snprintf (buf, size, "%.*s", (int)(end - start), start);
    return buf;
}

static int reap (pid_t pid, int *status)
{
    while (waitpid (pid, status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

/* Run argv (posix_spawn: no shell, and safe in fabricd's threaded process),
 * stdout in *out (malloc'd, NUL-terminated). Non-zero exit: -1 with errno from
 * Slurm's message. A hung command is killed at the timeout (EAGAIN).
 */
static int sc_run (sc_t *sc, char *const argv[], char **out, fm_error_t *err)
{
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    buf_t bo = {.max = OUT_MAX}, be = {.max = ERR_MAX};
    char **env = NULL;
    pid_t pid;
    int rc, status, e = EIO;
    bool timed_out = false, fa_init = false;
    char msg[160];

    if (pipe2 (po, O_CLOEXEC) < 0 || pipe2 (pe, O_CLOEXEC) < 0) {
        e = errno;
        fm_errprintf (err, "pipe: %s", strerror (e));
        goto fail;
    }
    if (!(env = child_env (sc)) || (rc = posix_spawn_file_actions_init (&fa)) != 0) {
        e = ENOMEM;
        fm_errprintf (err, "out of memory");
        goto fail;
    }
    fa_init = true;
    if ((rc = posix_spawn_file_actions_addopen (&fa, 0, "/dev/null", O_RDONLY, 0))
        || (rc = posix_spawn_file_actions_adddup2 (&fa, po[1], 1))
        || (rc = posix_spawn_file_actions_adddup2 (&fa, pe[1], 2))
        || (rc = posix_spawnp (&pid, argv[0], &fa, NULL, argv, env))) {
        e = rc;
        fm_errprintf (err, "%s: %s", argv[0], strerror (rc));
        goto fail;
    }
    close (po[1]);
    close (pe[1]);
    po[1] = pe[1] = -1;

    int64_t deadline = now_ms () + sc->timeout_ms;
    while (po[0] >= 0 || pe[0] >= 0) {
        struct pollfd pfd[2] = {{.fd = po[0], .events = POLLIN},
                                {.fd = pe[0], .events = POLLIN}};
        int64_t left = deadline - now_ms ();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        if (poll (pfd, 2, (int)left) < 0) {
            if (errno == EINTR) {
                continue;
            }
            e = errno;
            kill (pid, SIGKILL);
            reap (pid, &status);
            fm_errprintf (err, "poll: %s", strerror (e));
            goto fail;
        }
        for (int i = 0; i < 2; i++) {
            int *fd = i == 0 ? &po[0] : &pe[0];
            if (*fd >= 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                int r = buf_read (i == 0 ? &bo : &be, *fd);
                if (r < 0) {
                    kill (pid, SIGKILL);
                    reap (pid, &status);
                    e = ENOMEM;
                    fm_errprintf (err, "out of memory");
                    goto fail;
                }
                if (r == 0) {
                    close (*fd);
                    *fd = -1;
                }
            }
        }
    }
    if (timed_out) {
        kill (pid, SIGKILL);
    }
    if (reap (pid, &status) < 0) {
        e = errno;
        fm_errprintf (err, "waitpid: %s", strerror (e));
        goto fail;
    }
    if (timed_out) {
        e = EAGAIN;
        fm_errprintf (err, "%s timed out after %d ms", argv[0], sc->timeout_ms);
        goto fail;
    }
    if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
        /* scontrol prints some refusals ("Node x not found") on stdout. */
        const char *src = be.len ? be.data : (bo.len ? bo.data : "");
        last_line (src, msg, sizeof (msg));
        e = fm_actions_errno_from_message (msg);
        if (WIFSIGNALED (status)) {
            fm_errprintf (err, "%s killed by signal %d", argv[0], WTERMSIG (status));
        } else {
            fm_errprintf (err, "%s: %s", argv[0], msg[0] ? msg : "failed");
        }
        goto fail;
    }
    if (bo.truncated) {
        e = EOVERFLOW;
        fm_errprintf (err, "%s output exceeds %u bytes", argv[0], OUT_MAX);
        goto fail;
    }
    if (!bo.data && !(bo.data = strdup (""))) {
        e = ENOMEM;
        fm_errprintf (err, "out of memory");
        goto fail;
    }
    posix_spawn_file_actions_destroy (&fa);
    free (env);
    free (be.data);
    if (out) {
        *out = bo.data;
    } else {
        free (bo.data);
    }
    return 0;
fail:
    if (fa_init) {
        posix_spawn_file_actions_destroy (&fa);
    }
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0) {
            close (po[i]);
        }
        if (pe[i] >= 0) {
            close (pe[i]);
        }
    }
    free (env);
    free (bo.data);
    free (be.data);
    errno = e;
    return -1;
}

/* Call fn for each non-empty line of text (modified in place). */
int fm_actions_scontrol_command (const fm_actions_opts_t *opts,
                                 char *const argv[],
                                 char **out,
                                 fm_error_t *err)
{
    sc_t *sc;
    int rc;

    if (!opts || !argv || !argv[0]) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (!(sc = sc_create (opts, err))) {
        return -1;
    }
    rc = sc_run (sc, argv, out, err);
    if (rc < 0) {
        int e = errno;
        sc_destroy (sc);
        errno = e;
        return -1;
    }
    sc_destroy (sc);
    return rc;
}

static int each_line (char *text,
                      int (*fn) (const char *line, void *arg, fm_error_t *err),
                      void *arg,
                      fm_error_t *err)
{
    char *save = NULL;

    for (char *l = strtok_r (text, "\n", &save); l; l = strtok_r (NULL, "\n", &save)) {
        if (l[0] && fn (l, arg, err) < 0) {
            return -1;
        }
    }
    return 0;
}

typedef struct {
    void *v;
    size_t n, cap, size;
} vec_t;

static void *vec_push (vec_t *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        void *p = realloc (v->v, cap * v->size);
        if (!p) {
            return NULL;
        }
        v->v = p;
        v->cap = cap;
    }
    return (char *)v->v + v->size * v->n++;
}

static int node_line (const char *line, void *arg, fm_error_t *err)
{
    fm_node_info_t *n = vec_push (arg);

    if (!n) {
        return fm_errprintf (err, "out of memory");
    }
    if (fm_actions_parse_node_line (line, n, err) < 0) {
        ((vec_t *)arg)->n--;
        return -1;
    }
    return 0;
}

static int sc_nodes_load (void *impl,
                          const char *node,
                          fm_node_info_t **nodes,
                          size_t *count,
                          fm_error_t *err)
{
    sc_t *sc = impl;
    char *argv[] = {sc->scontrol, "-o", "show", "node", (char *)node, NULL};
    vec_t v = {.size = sizeof (fm_node_info_t)};
    char *out;

    if (sc_run (sc, argv, &out, err) < 0) {
        return -1;
    }
    if (each_line (out, node_line, &v, err) < 0) {
        int e = errno;
        free (out);
        free (v.v);
        errno = e;
        return -1;
    }
    free (out);
    *nodes = v.v;
    *count = v.n;
    return 0;
}

static int sc_node_update (void *impl,
                           const char *node,
                           fm_node_update_t what,
                           const char *reason,
                           int64_t weight,
                           fm_error_t *err)
{
    sc_t *sc = impl;
    char a_node[16 + FM_ACTIONS_NODE_NAME_MAX];
    char a_reason[16 + FM_ACTIONS_REASON_MAX];
    char a_weight[32];
    char *argv[] = {sc->scontrol, "update", a_node, NULL, NULL, NULL};

    snprintf (a_node, sizeof (a_node), "NodeName=%s", node);
    switch (what) {
    case FM_NODE_UPDATE_DRAIN:
        snprintf (a_reason, sizeof (a_reason), "Reason=%s", reason);
        argv[3] = "State=DRAIN";
        argv[4] = a_reason;
        break;
    case FM_NODE_UPDATE_RESUME:
        argv[3] = "State=RESUME";
        break;
    case FM_NODE_UPDATE_WEIGHT:
        snprintf (a_weight, sizeof (a_weight), "Weight=%" PRId64, weight);
        argv[3] = a_weight;
        break;
    }
    return sc_run (sc, argv, NULL, err);
}

static int job_line (const char *line, void *arg, fm_error_t *err)
{
    fm_job_info_t *j = vec_push (arg);

    if (!j) {
        return fm_errprintf (err, "out of memory");
    }
    if (fm_actions_parse_job_line (line, j, err) < 0) {
        ((vec_t *)arg)->n--;
        return -1;
    }
    return 0;
}

static int sc_jobs_load (
    void *impl, int64_t job_id, fm_job_info_t **jobs, size_t *count, fm_error_t *err)
{
    sc_t *sc = impl;
    char id[24];
    char *argv[] = {sc->scontrol, "-o", "show", "job", job_id ? id : NULL, NULL};
    vec_t v = {.size = sizeof (fm_job_info_t)};
    char *out;

    snprintf (id, sizeof (id), "%" PRId64, job_id);
    if (sc_run (sc, argv, &out, err) < 0) {
        return -1;
    }
    /* "No jobs in the system" is a line without JobId=. */
    if (strncmp (out, "No jobs", 7) != 0 && each_line (out, job_line, &v, err) < 0) {
        int e = errno;
        free (out);
        fm_actions_job_info_free (v.v, v.n);
        errno = e;
        return -1;
    }
    free (out);
    *jobs = v.v;
    *count = v.n;
    return 0;
}

static int
sc_job_signal (void *impl, int64_t job_id, int sig, bool batch_only, fm_error_t *err)
{
    sc_t *sc = impl;
    char a_sig[24], id[24];
    char *argv[] = {sc->scancel, a_sig, batch_only ? "--batch" : id, id, NULL};

    snprintf (a_sig, sizeof (a_sig), "--signal=%d", sig);
    snprintf (id, sizeof (id), "%" PRId64, job_id);
    if (!batch_only) {
        argv[3] = NULL;
    }
    return sc_run (sc, argv, NULL, err);
}

static int sc_job_requeue (void *impl, int64_t job_id, fm_error_t *err)
{
    sc_t *sc = impl;
    char id[24];
    char *argv[] = {sc->scontrol, "requeue", id, NULL};

    snprintf (id, sizeof (id), "%" PRId64, job_id);
    return sc_run (sc, argv, NULL, err);
}

const fm_actions_ops_t fm_actions_scontrol_ops = {
    .name = "scontrol",
    .create = sc_create,
    .destroy = sc_destroy,
    .nodes_load = sc_nodes_load,
    .node_update = sc_node_update,
    .jobs_load = sc_jobs_load,
    .job_signal = sc_job_signal,
    .job_requeue = sc_job_requeue,
};

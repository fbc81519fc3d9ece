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
#include <strings.h>
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

/* The value of " Key=" in a `scontrol -o` line (key at the start or after a
 * space, so "NodeList" is not "ReqNodeList"), up to the next space. NULL when
 * absent.
 */
static const char *field (const char *line, const char *key, size_t *len)
{
    size_t kl = strlen (key);

    for (const char *p = line; (p = strstr (p, key)); p += kl) {
        if ((p == line || p[-1] == ' ') && p[kl] == '=') {
            const char *v = p + kl + 1;
            *len = strcspn (v, " \n");
            return v;
        }
    }
    return NULL;
}

static bool field_copy (const char *line, const char *key, char *buf, size_t size)
{
    size_t len;
    const char *v = field (line, key, &len);

    if (!v || len >= size) {
        return false;
    }
    memcpy (buf, v, len);
    buf[len] = '\0';
    if (!strcmp (buf, "(null)")) {
        buf[0] = '\0';
    }
    return true;
}

static bool parse_i64 (const char *s, int64_t *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll (s, &end, 10);
    if (errno || end == s || *end) {
        return false;
    }
    *out = v;
    return true;
}

static unsigned node_state_parse (const char *s)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"IDLE", FM_NODE_IDLE},
        {"ALLOCATED", FM_NODE_ALLOC},
        {"ALLOC", FM_NODE_ALLOC},
        {"MIXED", FM_NODE_MIXED},
        {"DOWN", FM_NODE_DOWN},
        {"DRAIN", FM_NODE_DRAIN},
        {"DRAINED", FM_NODE_DRAIN},
        {"DRAINING", FM_NODE_DRAIN},
        {"FAIL", FM_NODE_FAIL},
        {"FAILING", FM_NODE_FAIL},
        {"COMPLETING", FM_NODE_COMPLETING},
        {"NOT_RESPONDING", FM_NODE_NO_RESPOND},
        {"MAINTENANCE", FM_NODE_MAINT},
        {"MAINT", FM_NODE_MAINT},
        {"RESERVED", FM_NODE_RESERVED},
        {"FUTURE", FM_NODE_FUTURE},
        {"UNKNOWN", FM_NODE_UNKNOWN},
    };
    unsigned state = 0;
    char word[32];

    while (s && *s) {
        size_t len = strcspn (s, "+");
        if (len > 0 && len < sizeof (word)) {
            memcpy (word, s, len);
            word[len] = '\0';
            /* sinfo-style suffixes: '*' not responding, '~' powered off, ... */
            size_t wl = len;
            while (wl > 0 && strchr ("*~#!%$@^-", word[wl - 1])) {
                if (word[wl - 1] == '*') {
                    state |= FM_NODE_NO_RESPOND;
                }
                word[--wl] = '\0';
            }
            for (size_t i = 0; i < sizeof (names) / sizeof (names[0]); i++) {
                if (!strcasecmp (word, names[i].name)) {
                    state |= names[i].bit;
                    break;
                }
            }
        }
        s += len;
        if (*s == '+') {
            s++;
        }
    }
    return state;
}

int fm_actions_scontrol_parse_node_line (const char *line,
                                         fm_node_info_t *info,
                                         fm_error_t *err)
{
    fm_node_info_t n = {0};
    char state[128], weight[24];
    const char *r;

    if (!line || !info) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (!field_copy (line, "NodeName", n.name, sizeof (n.name)) || !n.name[0]) {
        errno = EINVAL;
        return fm_errprintf (err, "node line without a valid NodeName=");
    }
    if (!field_copy (line, "State", state, sizeof (state))
        || !(n.state = node_state_parse (state))) {
        errno = EINVAL;
        return fm_errprintf (err, "node %s: no valid State=", n.name);
    }
    if (!field_copy (line, "Weight", weight, sizeof (weight))
        || !parse_i64 (weight, &n.weight)) {
        errno = EINVAL;
        return fm_errprintf (err, "node %s: no valid Weight=", n.name);
    }
    /* Reason is free text and comes last: the rest of the line, less the
     * " [user@time]" Slurm appends.
     */
    size_t len;
    if ((r = field (line, "Reason", &len))) {
        len = strcspn (r, "\n");
        while (len > 0 && r[len - 1] == ' ') {
            len--;
        }
        if (len > 0 && r[len - 1] == ']') {
            const char *open = NULL;
            for (const char *q = r; q < r + len; q++) {
                if (q[0] == ' ' && q[1] == '[') {
                    open = q;
                }
            }
            if (open && memchr (open, '@', (size_t)(r + len - open))) {
                len = (size_t)(open - r);
            }
        }
        if (len >= sizeof (n.reason)) {
            len = sizeof (n.reason) - 1;
        }
        memcpy (n.reason, r, len);
        n.reason[len] = '\0';
        if (!strcmp (n.reason, "(null)")) {
            n.reason[0] = '\0';
        }
    }
    *info = n;
    return 0;
}

static fm_job_state_t job_state_parse (const char *s, bool *completing, bool *ok)
{
    static const struct {
        const char *name;
        fm_job_state_t state;
        bool completing;
    } names[] = {
        {"PENDING", FM_JOB_PENDING, false},
        {"REQUEUED", FM_JOB_PENDING, true},
        {"REQUEUE_HOLD", FM_JOB_PENDING, true},
        {"REQUEUE_FED", FM_JOB_PENDING, true},
        {"SPECIAL_EXIT", FM_JOB_PENDING, false},
        {"RESV_DEL_HOLD", FM_JOB_PENDING, false},
        {"RUNNING", FM_JOB_RUNNING, false},
        {"CONFIGURING", FM_JOB_RUNNING, false},
        {"RESIZING", FM_JOB_RUNNING, false},
        {"SUSPENDED", FM_JOB_SUSPENDED, false},
        {"STOPPED", FM_JOB_SUSPENDED, false},
        {"COMPLETING", FM_JOB_ENDED, true},
        {"SIGNALING", FM_JOB_ENDED, true},
        {"STAGE_OUT", FM_JOB_ENDED, true},
        {"COMPLETED", FM_JOB_ENDED, false},
        {"CANCELLED", FM_JOB_ENDED, false},
        {"FAILED", FM_JOB_ENDED, false},
        {"TIMEOUT", FM_JOB_ENDED, false},
        {"NODE_FAIL", FM_JOB_ENDED, false},
        {"PREEMPTED", FM_JOB_ENDED, false},
        {"BOOT_FAIL", FM_JOB_ENDED, false},
        {"DEADLINE", FM_JOB_ENDED, false},
        {"OUT_OF_MEMORY", FM_JOB_ENDED, false},
        {"REVOKED", FM_JOB_ENDED, false},
    };

    for (size_t i = 0; i < sizeof (names) / sizeof (names[0]); i++) {
        if (!strcmp (s, names[i].name)) {
            *completing = names[i].completing;
            *ok = true;
            return names[i].state;
        }
    }
    *ok = false;
    return FM_JOB_ENDED;
}

int fm_actions_scontrol_parse_job_line (const char *line,
                                        fm_job_info_t *info,
                                        fm_error_t *err)
{
    fm_job_info_t j = {0};
    char buf[32];
    int64_t v;
    bool ok;
    size_t len;
    const char *nodes;

    if (!line || !info) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if (!field_copy (line, "JobId", buf, sizeof (buf)) || !parse_i64 (buf, &v)
        || v <= 0) {
        errno = EINVAL;
        return fm_errprintf (err, "job line without a valid JobId=");
    }
    j.job_id = v;
    if (!field_copy (line, "JobState", j.state_name, sizeof (j.state_name))) {
        errno = EINVAL;
        return fm_errprintf (err, "job %" PRId64 ": no JobState=", j.job_id);
    }
    j.state = job_state_parse (j.state_name, &j.completing, &ok);
    if (!ok) {
        errno = EINVAL;
        return fm_errprintf (
            err, "job %" PRId64 ": unknown JobState=%s", j.job_id, j.state_name);
    }
    if (!field_copy (line, "Requeue", buf, sizeof (buf)) || !parse_i64 (buf, &v)) {
        errno = EINVAL;
        return fm_errprintf (err, "job %" PRId64 ": no valid Requeue=", j.job_id);
    }
    j.requeue = v != 0;
    if (!field_copy (line, "Restarts", buf, sizeof (buf)) || !parse_i64 (buf, &v)
        || v < 0 || v > 65535) {
        errno = EINVAL;
        return fm_errprintf (err, "job %" PRId64 ": no valid Restarts=", j.job_id);
    }
    j.restarts = (int)v;
    if (!field_copy (line, "BatchHost", j.batch_host, sizeof (j.batch_host))) {
        j.batch_host[0] = '\0';
    }
    if (!(nodes = field (line, "NodeList", &len))) {
        errno = EINVAL;
        return fm_errprintf (err, "job %" PRId64 ": no NodeList=", j.job_id);
    }
    if (len == 6 && !strncmp (nodes, "(null)", 6)) {
        len = 0;
    }
    if (!(j.nodes = strndup (nodes, len))) {
        return fm_errprintf (err, "out of memory");
    }
    *info = j;
    return 0;
}

int fm_actions_scontrol_errno_from_message (const char *msg)
{
    static const struct {
        const char *text;
        int errnum;
    } table[] = {
        {"Unable to contact slurm controller", EAGAIN},
        {"Socket timed out", EAGAIN},
        {"connect failure", EAGAIN},
        {"Connection refused", EAGAIN},
        {"Communication connection failure", EAGAIN},
        {"Zero Bytes were transmitted", EAGAIN},
        {"standby mode", EAGAIN},
        {"Protocol authentication error", EAGAIN},
        {"timed out", EAGAIN},
        {"Invalid node name", ENOENT},
        {"not found", ENOENT},
        {"Invalid job id", ESRCH},
        {"already completing or completed", ESRCH},
        {"Job is pending execution", ESRCH},
        {"Access/permission denied", EPERM},
        {"presently disabled", EPERM},
        {"Invalid node state", EINVAL},
    };

    if (!msg) {
        return EIO;
    }
    for (size_t i = 0; i < sizeof (table) / sizeof (table[0]); i++) {
        if (strcasestr (msg, table[i].text)) {
            return table[i].errnum;
        }
    }
    return EIO;
}

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
        e = fm_actions_scontrol_errno_from_message (msg);
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
    if (fm_actions_scontrol_parse_node_line (line, n, err) < 0) {
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
    if (fm_actions_scontrol_parse_job_line (line, j, err) < 0) {
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

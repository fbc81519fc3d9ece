/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "duration.h"
#include "summary.h"
#include "fmtime.h"

#define PFX "fabric-monitor: "

/* "12.3us", "1.20ms", "-" for null */
static void fmt_ns (json_t *v, char *buf, size_t len)
{
    if (json_is_integer (v)) {
        fm_duration_format (json_integer_value (v), buf, len);
    } else {
        snprintf (buf, len, "-");
    }
}

/* A string from the daemon as one safe line of the job's output: control
 * characters (a newline would forge a line) become '?', at most len-1 bytes.
 */
static void clean (const char *in, char *out, size_t len)
{
    size_t i = 0;

    for (; in && in[i] && i + 1 < len; i++) {
        unsigned char c = (unsigned char)in[i];
        out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[i] = '\0';
}

/* "12:00:03", local time of at_ns. */
static void fmt_clock (json_int_t at_ns, char *buf, size_t len)
{
    time_t t = (time_t)(at_ns / 1000000000LL);
    struct tm tm;

    if (at_ns <= 0 || !localtime_r (&t, &tm)
        || strftime (buf, len, "%H:%M:%S", &tm) == 0) {
        snprintf (buf, len, "-");
    }
}

/* The `actions` array: what fabricd did, or would have done, about the job's
 * nodes. -1 when it is not the documented array.
 */
static int print_actions (FILE *fp, json_t *actions)
{
    json_t *a;
    size_t i;

    if (!actions) {
        return 0;
    }
    if (!json_is_array (actions)) {
        return -1;
    }
    json_array_foreach (actions, i, a) {
        const char *kind, *node, *reason, *result;
        json_int_t at;
        char when[16], k[32], n[72], r[256], res[32];

        if (json_unpack (a,
                         "{s:I, s:s, s:s, s:s, s:s}",
                         "at_ns",
                         &at,
                         "kind",
                         &kind,
                         "node",
                         &node,
                         "reason",
                         &reason,
                         "result",
                         &result)
            < 0) {
            return -1;
        }
        if (i == FM_SUMMARY_MAX_ACTIONS) {
            fprintf (fp,
                     PFX "... %zu more actions (fabricctl actions)\n",
                     json_array_size (actions) - i);
            break;
        }
        fmt_clock (at, when, sizeof (when));
        clean (kind, k, sizeof (k));
        clean (node, n, sizeof (n));
        clean (reason, r, sizeof (r));
        clean (result, res, sizeof (res));
        fprintf (fp, PFX "action %s %s %s: %s (%s)\n", when, k, n, r, res);
    }
    return 0;
}

/* What one health record of a node's latest window says that a user should
 * know; nothing for records that say all is well.
 */
static void print_record (FILE *fp, const char *node, json_t *r)
{
    const char *type = json_string_value (json_object_get (r, "type"));
    char a[72], b[72], c[72];

    if (!type) {
        return;
    }
    if (strcmp (type, "steer") == 0) {
        clean (json_string_value (json_object_get (r, "exclude")), a, sizeof (a));
        fprintf (fp,
                 PFX "steering %s: NCCL_IB_HCA=^=%s for steps started after the "
                     "port degraded (degraded HCA ports left out)\n",
                 node,
                 a);
    } else if (strcmp (type, "ib_port") == 0) {
        const char *st = json_string_value (json_object_get (r, "state"));
        json_int_t downed = json_integer_value (json_object_get (r, "link_downed"));
        if ((st && strcmp (st, "ACTIVE") != 0) || downed > 0) {
            clean (json_string_value (json_object_get (r, "device")), a, sizeof (a));
            clean (st, b, sizeof (b));
            clean (
                json_string_value (json_object_get (r, "phys_state")), c, sizeof (c));
            fprintf (fp,
                     PFX "health %s: %s port %" JSON_INTEGER_FORMAT
                         " %s (%s), link_downed +%" JSON_INTEGER_FORMAT "\n",
                     node,
                     a,
                     json_integer_value (json_object_get (r, "port")),
                     b,
                     c,
                     downed);
        }
    } else if (strcmp (type, "nic") == 0) {
        json_int_t flaps = json_integer_value (json_object_get (r, "carrier_changes"));
        if (json_is_false (json_object_get (r, "link_up")) || flaps > 0) {
            clean (json_string_value (json_object_get (r, "name")), a, sizeof (a));
            fprintf (fp,
                     PFX "health %s: %s link %s, %" JSON_INTEGER_FORMAT
                         " carrier changes\n",
                     node,
                     a,
                     json_is_true (json_object_get (r, "link_up")) ? "up" : "down",
                     flaps);
        }
    } else if (strcmp (type, "xid") == 0) {
        const char *cls = json_string_value (json_object_get (r, "class"));
        /* the application's own XIDs are the job's to read in its logs */
        if (cls && strcmp (cls, "application") != 0 && strcmp (cls, "info") != 0) {
            clean (json_string_value (json_object_get (r, "device")), a, sizeof (a));
            clean (cls, b, sizeof (b));
            clean (json_string_value (json_object_get (r, "action")), c, sizeof (c));
            fprintf (fp,
                     PFX "health %s: GPU %s XID %" JSON_INTEGER_FORMAT
                         " x%" JSON_INTEGER_FORMAT " (%s, %s)\n",
                     node,
                     a,
                     json_integer_value (json_object_get (r, "xid")),
                     json_integer_value (json_object_get (r, "count")),
                     b,
                     c);
        }
    }
}

/* The optional `health` array: per node of the job, its latest window's
 * health records (doc/health.md "In the job summary"). -1 when malformed.
 */
static int print_health (FILE *fp, json_t *health)
{
    json_t *h, *recs, *r;
    size_t i, j;

    if (!health) {
        return 0;
    }
    if (!json_is_array (health)) {
        return -1;
    }
    json_array_foreach (health, i, h) {
        const char *node;
        char n[72];

        if (json_unpack (h, "{s:s, s:o}", "node", &node, "health", &recs) < 0
            || !json_is_array (recs)) {
            return -1;
        }
        clean (node, n, sizeof (n));
        json_array_foreach (recs, j, r) {
            print_record (fp, n, r);
        }
    }
    return 0;
}

char *fm_summary_format (json_t *summary, fm_error_t *err)
{
    json_int_t job_id, windows, records;
    json_t *links, *l;
    const char *mode;
    char *buf = NULL;
    size_t len = 0, i, nlinks, shown;
    FILE *fp;

    if (json_unpack (summary,
                     "{s:I, s:I, s:I, s:o}",
                     "job_id",
                     &job_id,
                     "windows",
                     &windows,
                     "records",
                     &records,
                     "links",
                     &links)
            < 0
        || !json_is_array (links)) {
        errno = EPROTO;
        fm_errprintf (err, "the summary answer is not the documented object");
        return NULL;
    }
    if (!(fp = open_memstream (&buf, &len))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    /* fabricd lists the worst links and counts them all (nlinks) */
    nlinks = json_is_integer (json_object_get (summary, "nlinks"))
                 ? (size_t)json_integer_value (json_object_get (summary, "nlinks"))
                 : json_array_size (links);
    mode = json_string_value (json_object_get (summary, "mode"));
    fprintf (fp,
             PFX "network summary of job %" JSON_INTEGER_FORMAT
                 "%s%s%s: %" JSON_INTEGER_FORMAT
                 " report windows, %" JSON_INTEGER_FORMAT " link records, %zu links\n",
             job_id,
             mode ? " (" : "",
             mode ? mode : "",
             mode ? " mode)" : "",
             windows,
             records,
             nlinks);
    if (json_array_size (links) > 0) {
        fprintf (fp,
                 PFX "%-28s %-12s %8s %6s %7s %9s %9s %9s %9s\n",
                 "link (worst first)",
                 "reporter",
                 "sent",
                 "lost",
                 "loss%",
                 "rtt_p50",
                 "rtt_p99",
                 "owd_p50",
                 "owd_p99");
    }
    json_array_foreach (links, i, l) {
        const char *src, *dst, *rep;
        json_int_t sent, lost;
        double ratio;
        char link[64], r50[16], r99[16], o50[16], o99[16];

        if (i == FM_SUMMARY_MAX_LINKS) {
            break;
        }
        if (json_unpack (l,
                         "{s:s, s:s, s:s, s:I, s:I, s:F}",
                         "src",
                         &src,
                         "dst",
                         &dst,
                         "reporter",
                         &rep,
                         "sent",
                         &sent,
                         "lost",
                         &lost,
                         "loss_ratio",
                         &ratio)
            < 0) {
            fclose (fp);
            free (buf);
            errno = EPROTO;
            fm_errprintf (err, "summary link %zu is not the documented object", i);
            return NULL;
        }
        snprintf (link, sizeof (link), "%s -> %s", src, dst);
        fmt_ns (json_object_get (l, "rtt_p50_ns"), r50, sizeof (r50));
        fmt_ns (json_object_get (l, "rtt_p99_ns"), r99, sizeof (r99));
        fmt_ns (json_object_get (l, "owd_p50_ns"), o50, sizeof (o50));
        fmt_ns (json_object_get (l, "owd_p99_ns"), o99, sizeof (o99));
        fprintf (fp,
                 PFX "%-28s %-12s %8" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT
                     " %6.2f%% %9s %9s %9s %9s\n",
                 link,
                 rep,
                 sent,
                 lost,
                 ratio * 100,
                 r50,
                 r99,
                 o50,
                 o99);
    }
    shown = json_array_size (links) < FM_SUMMARY_MAX_LINKS ? json_array_size (links)
                                                           : FM_SUMMARY_MAX_LINKS;
    if (nlinks > shown) {
        fprintf (
            fp, PFX "... %zu more links (fabricctl links --job)\n", nlinks - shown);
    }
    if (print_health (fp, json_object_get (summary, "health")) < 0
        || print_actions (fp, json_object_get (summary, "actions")) < 0) {
        fclose (fp);
        free (buf);
        errno = EPROTO;
        fm_errprintf (err,
                      "the summary's health or actions are not the documented arrays");
        return NULL;
    }
    if (fclose (fp) != 0) {
        free (buf);
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    return buf;
}

int fm_summary_pending (json_t *job, size_t *agents, size_t *pending)
{
    json_t *a, *v;
    size_t i, n = 0;

    if (!json_is_array (a = json_object_get (job, "agents"))) {
        errno = EPROTO;
        return -1;
    }
    json_array_foreach (a, i, v) {
        json_t *f = json_object_get (v, "final");
        if (!json_is_boolean (f)) {
            errno = EPROTO;
            return -1;
        }
        if (!json_is_true (f)) {
            n++;
        }
    }
    *agents = json_array_size (a);
    *pending = n;
    return 0;
}

/* Poll the job until its agents are final or wait_ns passed: the number of
 * agents still pending into *pending (0 also when the job view is
 * unavailable: the summary then says what it can).
 */
static void wait_final (
    fm_client_t *c, uint64_t job_id, int64_t wait_ns, size_t *agents, size_t *pending)
{
    int64_t deadline = fm_time_mono_ns () + wait_ns;
    char path[64];

    *agents = *pending = 0;
    snprintf (path, sizeof (path), "/v1/jobs/%" PRIu64, job_id);
    for (;;) {
        json_t *ans = NULL;
        fm_error_t err;
        int64_t now;
        int rc = fm_client_request (c, "GET", path, NULL, &ans, &err);

        rc = rc == 200 ? fm_summary_pending (ans, agents, pending) : -1;
        json_decref (ans);
        if (rc < 0) {
            *agents = *pending = 0;
            return;
        }
        now = fm_time_mono_ns ();
        if (*pending == 0 || now >= deadline) {
            return;
        }
        {
            struct timespec ts = fm_time_to_timespec (deadline - now < FM_SUMMARY_POLL_NS
                                                        ? deadline - now
                                                        : FM_SUMMARY_POLL_NS);
            while (nanosleep (&ts, &ts) < 0 && errno == EINTR) {
            }
        }
    }
}

int fm_summary_fetch (const char *daemon_url,
                      const char *munge_socket,
                      uint64_t job_id,
                      const char *output,
                      int64_t wait_ns,
                      fm_error_t *err)
{
    fm_client_t *c;
    json_t *ans = NULL;
    char path[64], *text = NULL;
    int status, fd = STDOUT_FILENO, ret = -1;
    struct stat sb;
    size_t len, off = 0, agents = 0, pending = 0;

    if (!(c = fm_client_create (daemon_url, munge_socket, 5000, err))) {
        return -1;
    }
    if (wait_ns > 0) {
        wait_final (c, job_id, wait_ns, &agents, &pending);
    }
    snprintf (path, sizeof (path), "/v1/jobs/%" PRIu64 "/summary", job_id);
    status = fm_client_request (c, "GET", path, NULL, &ans, err);
    fm_client_destroy (c);
    if (status != 200) {
        if (status > 0) {
            errno = EPROTO;
        }
        goto done;
    }
    if (!(text = fm_summary_format (ans, err))) {
        goto done;
    }
    if (pending > 0) {
        char *t;
        if (asprintf (&t,
                      "%s" PFX "%zu of %zu agents had not sent their last window"
                      " after %.3gs: it is not in this summary\n",
                      text,
                      pending,
                      agents,
                      (double)wait_ns / 1e9)
            < 0) {
            fm_errprintf (err, "out of memory");
            goto done;
        }
        free (text);
        text = t;
    }
    if (output) {
        /* the job's own output file: never create, never follow a link, and
         * only a regular file (not a FIFO or device the path was swapped for)
         */
        fd =
            open (output,
                  O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
            fm_errprintf (err, "%s: %s", output, strerror (errno));
            goto done;
        }
        if (fstat (fd, &sb) < 0 || !S_ISREG (sb.st_mode)) {
            errno = EINVAL;
            fm_errprintf (err, "%s: not a regular file", output);
            goto done;
        }
        /* the epilog checked the owner before it ran us as the job user; a
         * file swapped in since, which the user may write but does not own,
         * is still not the job's output
         */
        if (sb.st_uid != geteuid ()) {
            errno = EPERM;
            fm_errprintf (err,
                          "%s: owned by uid %u, not by uid %u",
                          output,
                          (unsigned)sb.st_uid,
                          (unsigned)geteuid ());
            goto done;
        }
    }
    len = strlen (text);
    while (off < len) {
        ssize_t w = write (fd, text + off, len - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0) {
            fm_errprintf (err, "%s: %s", output ? output : "stdout", strerror (errno));
            goto done;
        }
        off += (size_t)w;
    }
    ret = 0;
done:
    if (fd >= 0 && fd != STDOUT_FILENO) {
        close (fd);
    }
    json_decref (ans);
    free (text);
    return ret;
}

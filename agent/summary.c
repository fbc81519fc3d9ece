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
#include "summary.h"
#include "timeutil.h"

#define PFX "fabric-monitor: "

/* "12.3us", "1.20ms", "-" for null */
static void fmt_ns (json_t *v, char *buf, size_t len)
{
    double ns;

    if (!json_is_integer (v)) {
        snprintf (buf, len, "-");
        return;
    }
    ns = (double)json_integer_value (v);
    if (ns < 1e6 && ns > -1e6) {
        snprintf (buf, len, "%.1fus", ns / 1e3);
    } else {
        snprintf (buf, len, "%.2fms", ns / 1e6);
    }
}

char *fm_summary_format (json_t *summary, fm_error_t *err)
{
    json_int_t job_id, windows, records;
    json_t *links, *l;
    const char *mode;
    char *buf = NULL;
    size_t len = 0, i;
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
             json_array_size (links));
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
            fprintf (fp,
                     PFX "... %zu more links (fabricctl links --job)\n",
                     json_array_size (links) - i);
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
            struct timespec ts = fm_ns_to_timespec (deadline - now < FM_SUMMARY_POLL_NS
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

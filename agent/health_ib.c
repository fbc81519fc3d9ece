/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "health.h"
#include "log.h"

/* InfiniBand and RoCE ports: /sys/class/infiniband/<hca>/ports/<n>/{state,
 * phys_state,rate,link_layer,counters/NAME,hw_counters/NAME,gid_attrs/ndevs/N}.
 */

#define PORTS_MAX 255
#define COUNTERS_MAX 512

/* api.md's ib_port counters; a missing one is logged. */
static const char *const required[] = {"symbol_error",
                                       "link_error_recovery",
                                       "link_downed",
                                       "port_rcv_errors",
                                       "port_xmit_discards",
                                       "port_xmit_wait",
                                       NULL};
/* Words in counters/ and hw_counters/ names that mean errors or congestion;
 * the rest (packets, data, requests) is traffic.
 */
static const char *const bad_words[] = {"err",
                                        "drop",
                                        "discard",
                                        "downed",
                                        "recovery",
                                        "wait",
                                        "out_of",
                                        "timeout",
                                        "retry",
                                        "nak",
                                        "cnp",
                                        "ecn",
                                        "retrans",
                                        "overrun",
                                        "icrc",
                                        NULL};

typedef struct {
    char *dir; /* <root>/sys/class/infiniband */
    char **hcas;
    fm_health_memo_t *memo;
} ib_t;

static void ib_fini (void *arg)
{
    ib_t *s = arg;
    int saved = errno;

    if (s) {
        fm_health_names_free (s->hcas);
        fm_health_memo_destroy (s->memo);
        free (s->dir);
        free (s);
    }
    errno = saved;
}

static void *ib_init (const fm_health_conf_t *conf, fm_error_t *err)
{
    const char *root = conf && conf->root ? conf->root : "/";
    ib_t *s = calloc (1, sizeof (*s));
    struct stat st;

    if (!s) {
        goto nomem;
    }
    if (asprintf (&s->dir, "%s/sys/class/infiniband", root) < 0) {
        s->dir = NULL;
        goto nomem;
    }
    if (!(s->memo = fm_health_memo_create ())) {
        goto nomem;
    }
    if (conf && conf->hcas
        && !(s->hcas =
                 fm_health_names_copy (conf->hcas, FM_HEALTH_NAME_MAX - 1, err))) {
        if (errno == ENOMEM) {
            goto nomem;
        }
        ib_fini (s);
        errno = EINVAL;
        return NULL;
    }
    if (stat (s->dir, &st) < 0 || !S_ISDIR (st.st_mode)) {
        fm_errprintf (err,
                      "no RDMA devices (%s: %s)",
                      s->dir,
                      errno ? strerror (errno) : "not a directory");
        ib_fini (s);
        errno = ENOENT;
        return NULL;
    }
    return s;
nomem:
    ib_fini (s);
    errno = ENOMEM;
    fm_errprintf (err, "out of memory");
    return NULL;
}

static int cmp_str (const void *a, const void *b)
{
    return strcmp (*(char *const *)a, *(char *const *)b);
}

/* Sorted, validated directory entries (at most max), NULL-terminated.
 * NULL/errno.
 */
static char **list_dir (const char *path, size_t max)
{
    DIR *d = opendir (path);
    struct dirent *e;
    char **v;
    size_t n = 0;

    if (!d) {
        return NULL;
    }
    if (!(v = calloc (max + 1, sizeof (*v)))) {
        closedir (d);
        errno = ENOMEM;
        return NULL;
    }
    while ((e = readdir (d)) && n < max) {
        if (fm_health_name_ok (e->d_name, FM_HEALTH_NAME_MAX - 1)
            && !(v[n++] = strdup (e->d_name))) {
            fm_health_names_free (v);
            closedir (d);
            errno = ENOMEM;
            return NULL;
        }
    }
    closedir (d);
    qsort (v, n, sizeof (*v), cmp_str);
    return v;
}

static bool is_bad (const char *name)
{
    for (int i = 0; bad_words[i]; i++) {
        if (strstr (name, bad_words[i])) {
            return true;
        }
    }
    return false;
}

/* "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp". -1/EINVAL on garbage. */
static int parse_state (const char *s, char *out, size_t len)
{
    const char *p = strchr (s, ':');

    p = p ? p + 1 : s;
    while (*p == ' ') {
        p++;
    }
    if (*p == '\0' || strlen (p) >= len) {
        errno = EINVAL;
        return -1;
    }
    for (const char *c = p; *c; c++) {
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z')
              || (*c >= '0' && *c <= '9') || *c == '_' || *c == ' ')) {
            errno = EINVAL;
            return -1;
        }
    }
    memcpy (out, p, strlen (p) + 1);
    return 0;
}

/* "100 Gb/sec (4X EDR)" -> 100000 Mbit/s. -1/EINVAL on garbage. */
static int parse_rate (const char *s, int64_t *mbps)
{
    char *end;
    double g;

    errno = 0;
    g = strtod (s, &end);
    if (errno || end == s || strncmp (end, " Gb/sec", 7) != 0 || !isfinite (g) || g < 0
        || g > 1e6) {
        errno = EINVAL;
        return -1;
    }
    *mbps = (int64_t)llround (g * 1000.0);
    return 0;
}

static int text_attr (ib_t *s,
                      const char *hca,
                      int port,
                      const char *portdir,
                      const char *file,
                      bool must,
                      fm_health_set_t *out)
{
    char path[768];
    char buf[128];
    char val[FM_HEALTH_NAME_MAX];
    int64_t mbps = 0;

    snprintf (path, sizeof (path), "%s/%s", portdir, file);
    if (fm_health_read_file (path, buf, sizeof (buf)) < 0
        || (strcmp (file, "rate") == 0 ? parse_rate (buf, &mbps)
                                       : parse_state (buf, val, sizeof (val)))
               < 0) {
        if ((must || errno != ENOENT) && fm_health_memo_note (s->memo, path)) {
            fm_warn ("health ib: %s: %s",
                     path,
                     errno == EINVAL ? "unexpected content" : strerror (errno));
        }
        return 0;
    }
    if (fm_health_memo_unnote (s->memo, path)) {
        fm_info ("health ib: %s: readable again", path);
    }
    if (strcmp (file, "rate") == 0) {
        return fm_health_add_gauge (
            out, FM_HREC_IB_PORT, hca, port, "rate_mbps", mbps, FM_HCLASS_INFO);
    }
    return fm_health_add_text (
        out,
        FM_HREC_IB_PORT,
        hca,
        port,
        file,
        val,
        strcmp (file, "state") == 0 && strcmp (val, "ACTIVE") != 0 ? FM_HCLASS_WARN
                                                                   : FM_HCLASS_INFO);
}

/* Every counter in dir (counters/ or hw_counters/), names prefixed by prefix. */
static int counters (ib_t *s,
                     const char *hca,
                     int port,
                     const char *dir,
                     const char *prefix,
                     fm_health_set_t *out)
{
    char **names = list_dir (dir, COUNTERS_MAX);
    int rc = 0;

    if (!names) {
        return errno == ENOMEM ? -1 : 0;
    }
    for (char **n = names; *n && rc == 0; n++) {
        char path[1024];
        char name[FM_HEALTH_NAME_MAX];
        char key[256];
        int64_t v, delta;

        snprintf (path, sizeof (path), "%s/%s", dir, *n);
        if (fm_health_read_counter (s->memo, "ib", path, &v) < 0) {
            continue;
        }
        snprintf (name, sizeof (name), "%s%s", prefix, *n);
        snprintf (key, sizeof (key), "%s/%d/%s", hca, port, name);
        if (fm_health_memo_delta (s->memo, key, v, &delta) < 0) {
            rc = -1;
            break;
        }
        rc = fm_health_add_counter (out,
                                    FM_HREC_IB_PORT,
                                    hca,
                                    port,
                                    name,
                                    delta,
                                    v,
                                    delta > 0 && is_bad (*n) ? FM_HCLASS_WARN
                                                             : FM_HCLASS_INFO);
    }
    fm_health_names_free (names);
    return rc;
}

/* The netdev of a RoCE port: the GID table's first netdev, else the only one
 * of the PCI function. Empty when none.
 */
static void roce_netdev (const char *hcadir, const char *portdir, char *out, size_t len)
{
    char path[1024];
    char **v;

    out[0] = '\0';
    snprintf (path, sizeof (path), "%s/gid_attrs/ndevs", portdir);
    if ((v = list_dir (path, 256))) {
        for (char **n = v; *n && !out[0]; n++) {
            char file[1100];
            char buf[64];

            snprintf (file, sizeof (file), "%s/%s", path, *n);
            if (fm_health_read_file (file, buf, sizeof (buf)) == 0
                && fm_health_name_ok (buf, len - 1)) {
                memcpy (out, buf, strlen (buf) + 1);
            }
        }
        fm_health_names_free (v);
    }
    if (out[0]) {
        return;
    }
    snprintf (path, sizeof (path), "%s/device/net", hcadir);
    if ((v = list_dir (path, 2))) {
        if (v[0] && !v[1] && strlen (v[0]) < len) {
            memcpy (out, v[0], strlen (v[0]) + 1);
        }
        fm_health_names_free (v);
    }
}

static int sample_port (
    ib_t *s, const char *hca, const char *hcadir, int port, fm_health_set_t *out)
{
    char portdir[600];
    char path[700];
    char ll[32] = "";
    char ndev[16];

    snprintf (portdir, sizeof (portdir), "%s/ports/%d", hcadir, port);
    if (text_attr (s, hca, port, portdir, "state", true, out) < 0
        || text_attr (s, hca, port, portdir, "phys_state", true, out) < 0
        || text_attr (s, hca, port, portdir, "rate", true, out) < 0) {
        return -1;
    }
    snprintf (path, sizeof (path), "%s/link_layer", portdir);
    if (fm_health_read_file (path, ll, sizeof (ll)) == 0 && ll[0]) {
        if (fm_health_add_text (
                out, FM_HREC_IB_PORT, hca, port, "link_layer", ll, FM_HCLASS_INFO)
            < 0) {
            return -1;
        }
        if (strcmp (ll, "Ethernet") == 0) {
            roce_netdev (hcadir, portdir, ndev, sizeof (ndev));
            if (ndev[0]
                && fm_health_add_text (
                       out, FM_HREC_IB_PORT, hca, port, "netdev", ndev, FM_HCLASS_INFO)
                       < 0) {
                return -1;
            }
        }
    }
    for (int i = 0; required[i]; i++) {
        snprintf (path, sizeof (path), "%s/counters/%s", portdir, required[i]);
        if (access (path, F_OK) < 0 && fm_health_memo_note (s->memo, path)) {
            fm_warn ("health ib: %s: %m", path);
        }
    }
    snprintf (path, sizeof (path), "%s/counters", portdir);
    if (counters (s, hca, port, path, "", out) < 0) {
        return -1;
    }
    snprintf (path, sizeof (path), "%s/hw_counters", portdir);
    return counters (s, hca, port, path, "hw:", out);
}

static bool wanted (ib_t *s, const char *hca)
{
    if (!s->hcas) {
        return true;
    }
    for (char **h = s->hcas; *h; h++) {
        if (strcmp (*h, hca) == 0) {
            return true;
        }
    }
    return false;
}

static int ib_sample (void *arg, fm_health_set_t *out, fm_error_t *err)
{
    ib_t *s = arg;
    size_t n0 = out->n;
    char **hcas = list_dir (s->dir, FM_HEALTH_DEVS_MAX);
    int rc = 0;

    if (!hcas) {
        return fm_errprintf (err, "%s: %s", s->dir, strerror (errno));
    }
    for (char **h = hcas; *h && rc == 0; h++) {
        char hcadir[512];
        char portsdir[600];
        char **ports;

        if (!wanted (s, *h)) {
            continue;
        }
        snprintf (hcadir, sizeof (hcadir), "%s/%s", s->dir, *h);
        snprintf (portsdir, sizeof (portsdir), "%s/ports", hcadir);
        if (!(ports = list_dir (portsdir, PORTS_MAX))) {
            if (errno == ENOMEM) {
                rc = -1;
            } else if (fm_health_memo_note (s->memo, portsdir)) {
                fm_warn ("health ib: %s: %m", portsdir);
            }
            continue;
        }
        for (char **p = ports; *p && rc == 0; p++) {
            int64_t port;

            if (fm_health_parse_u64 (*p, &port) == 0 && port >= 1
                && port <= PORTS_MAX) {
                rc = sample_port (s, *h, hcadir, (int)port, out);
            }
        }
        fm_health_names_free (ports);
    }
    fm_health_names_free (hcas);
    if (rc < 0) {
        out->n = n0;
        return fm_errprintf (err, "out of memory");
    }
    return 0;
}

const fm_health_collector_t fm_health_ib = {
    .name = "ib",
    .init = ib_init,
    .sample = ib_sample,
    .fini = ib_fini,
};

/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "health.h"
#include "log.h"

/* Network devices: /sys/class/net/<dev>/{operstate,carrier,speed,carrier_changes,
 * statistics/NAME} and the driver's ethtool statistics (SIOCETHTOOL).
 */

#define NET_DEVS_MAX FM_HEALTH_DEVS_MAX
#define ETHTOOL_STATS_MAX 8192 /* mlx5 has about 1000; more is refused */

/* api.md's nic counters are required; a missing one is logged. */
static const char *const required[] = {
    "rx_errors", "tx_errors", "rx_dropped", "tx_dropped", NULL};
/* Error counters some kernels or drivers lack; reported beyond api.md. */
static const char *const optional[] = {
    "rx_crc_errors",
    "rx_frame_errors",
    "rx_fifo_errors",
    "rx_missed_errors",
    "rx_over_errors",
    "rx_length_errors",
    "tx_aborted_errors",
    "tx_carrier_errors",
    "tx_fifo_errors",
    "tx_heartbeat_errors",
    "tx_window_errors",
    "collisions",
    "rx_nohandler",
    NULL,
};
/* ethtool statistics worth a record when they move. */
static const char *const ethtool_words[] = {"err",
                                            "drop",
                                            "discard",
                                            "crc",
                                            "fcs",
                                            "symbol",
                                            "timeout",
                                            "lost",
                                            "miss",
                                            "fault",
                                            "corrupt",
                                            "abort",
                                            "overflow",
                                            "pause",
                                            NULL};

typedef struct {
    char *dir; /* <root>/sys/class/net */
    char **devices;
    fm_health_memo_t *memo;
    int sock; /* for SIOCETHTOOL, -1 when disabled */
} net_t;

static void net_fini (void *arg)
{
    net_t *s = arg;
    int saved = errno;

    if (!s) {
        return;
    }
    fm_health_names_free (s->devices);
    if (s->sock >= 0) {
        close (s->sock);
    }
    fm_health_memo_destroy (s->memo);
    free (s->dir);
    free (s);
    errno = saved;
}

static void *net_init (const fm_health_conf_t *conf, fm_error_t *err)
{
    const char *root = conf && conf->root ? conf->root : "/";
    net_t *s = calloc (1, sizeof (*s));
    struct stat st;

    if (!s) {
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    s->sock = -1;
    if (asprintf (&s->dir, "%s/sys/class/net", root) < 0) {
        s->dir = NULL;
        goto nomem;
    }
    if (!(s->memo = fm_health_memo_create ())) {
        goto nomem;
    }
    if (conf && conf->netdevs
        && !(s->devices = fm_health_names_copy (conf->netdevs, IFNAMSIZ - 1, err))) {
        if (errno == ENOMEM) {
            goto nomem;
        }
        net_fini (s);
        errno = EINVAL;
        return NULL;
    }
    if (stat (s->dir, &st) < 0 || !S_ISDIR (st.st_mode)) {
        fm_errprintf (
            err, "%s: %s", s->dir, errno ? strerror (errno) : "not a directory");
        net_fini (s);
        errno = ENOENT;
        return NULL;
    }
    if (!(conf && conf->no_ethtool)) {
        s->sock = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s->sock < 0) {
            fm_info ("health net: no socket for ethtool statistics: %m");
        }
    }
    return s;
nomem:
    net_fini (s);
    errno = ENOMEM;
    fm_errprintf (err, "out of memory");
    return NULL;
}

/* The ethtool statistics of dev: *names (n * ETH_GSTRING_LEN bytes, each
 * NUL-terminated here) and *values. 0, or -1/errno: EOPNOTSUPP when the driver
 * has none (lo, ifb) or too many, ENODEV when there is no such device in this
 * namespace, EAGAIN when the count changed under us.
 *
 * GSTRINGS and GSTATS write as many entries as the driver has *now*, whatever
 * length the caller asked for, so the buffers get room for twice the count
 * given by GSSET_INFO and a count that outgrew it is refused (the netlink
 * ethtool interface has no such race; this one is what every driver has).
 */
static int
ethtool_read (int sock, const char *dev, char **names, uint64_t **values, size_t *count)
{
    /* room for the header and the one count asked for */
    uint64_t sbuf[(sizeof (struct ethtool_sset_info) + sizeof (uint32_t) + 7) / 8] = {
        0};
    struct ethtool_sset_info *sset = (struct ethtool_sset_info *)sbuf;
    struct ifreq ifr = {0};
    struct ethtool_gstrings *gs = NULL;
    struct ethtool_stats *st = NULL;
    size_t n, room;
    int saved;

    if (sock < 0 || strlen (dev) >= IFNAMSIZ) {
        errno = EOPNOTSUPP;
        return -1;
    }
    sset->cmd = ETHTOOL_GSSET_INFO;
    sset->sset_mask = 1ULL << ETH_SS_STATS;
    memcpy (ifr.ifr_name, dev, strlen (dev) + 1);
    ifr.ifr_data = (void *)sset;
    if (ioctl (sock, SIOCETHTOOL, &ifr) < 0) {
        return -1;
    }
    if (!(sset->sset_mask & (1ULL << ETH_SS_STATS)) || sset->data[0] == 0
        || sset->data[0] > ETHTOOL_STATS_MAX) {
        errno = EOPNOTSUPP;
        return -1;
    }
    n = sset->data[0];
    room = 2 * n;
    gs = calloc (1, sizeof (*gs) + room * ETH_GSTRING_LEN);
    st = calloc (1, sizeof (*st) + room * sizeof (uint64_t));
    if (!gs || !st) {
        errno = ENOMEM;
        goto fail;
    }
    gs->cmd = ETHTOOL_GSTRINGS;
    gs->string_set = ETH_SS_STATS;
    gs->len = (uint32_t)n;
    ifr.ifr_data = (void *)gs;
    if (ioctl (sock, SIOCETHTOOL, &ifr) < 0) {
        goto fail;
    }
    st->cmd = ETHTOOL_GSTATS;
    st->n_stats = (uint32_t)n;
    ifr.ifr_data = (void *)st;
    if (ioctl (sock, SIOCETHTOOL, &ifr) < 0) {
        goto fail;
    }
    /* Names and values must describe the same list. */
    if (gs->len != n || st->n_stats != n) {
        errno = gs->len > room || st->n_stats > room ? EOVERFLOW : EAGAIN;
        goto fail;
    }
    if (!(*names = malloc (n * ETH_GSTRING_LEN))) {
        errno = ENOMEM;
        goto fail;
    }
    if (!(*values = malloc (n * sizeof (uint64_t)))) {
        free (*names);
        errno = ENOMEM;
        goto fail;
    }
    memcpy (*names, gs->data, n * ETH_GSTRING_LEN);
    for (size_t i = 0; i < n; i++) {
        (*names)[i * ETH_GSTRING_LEN + ETH_GSTRING_LEN - 1] = '\0';
    }
    memcpy (*values, st->data, n * sizeof (uint64_t));
    *count = n;
    free (gs);
    free (st);
    return 0;
fail:
    saved = errno;
    free (gs);
    free (st);
    errno = saved;
    return -1;
}

static bool ethtool_wanted (const char *name)
{
    for (int i = 0; ethtool_words[i]; i++) {
        if (strstr (name, ethtool_words[i])) {
            return true;
        }
    }
    return false;
}

static int sample_ethtool (net_t *s, const char *dev, fm_health_set_t *out)
{
    char *names = NULL;
    uint64_t *values = NULL;
    size_t n = 0;
    char key[128];
    int rc = 0;

    snprintf (key, sizeof (key), "ethtool:%s", dev);
    if (ethtool_read (s->sock, dev, &names, &values, &n) < 0) {
        if (errno == ENOMEM) {
            return -1;
        }
        if (fm_health_memo_note (s->memo, key)) {
            fm_debug ("health net: %s: no ethtool statistics: %s",
                      dev,
                      errno == EOPNOTSUPP ? "not supported" : strerror (errno));
        }
        return 0;
    }
    fm_health_memo_unnote (s->memo, key);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *name = names + i * ETH_GSTRING_LEN;
        char rname[FM_HEALTH_NAME_MAX];
        int64_t delta;
        int64_t v = values[i] > INT64_MAX ? INT64_MAX : (int64_t)values[i];

        if (!ethtool_wanted (name)) {
            continue;
        }
        for (char *p = name; *p; p++) {
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
                  || (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-')) {
                *p = '_';
            }
        }
        snprintf (rname, sizeof (rname), "ethtool:%s", name);
        snprintf (key, sizeof (key), "%s/%s", dev, rname);
        if (fm_health_memo_delta (s->memo, key, v, &delta) < 0) {
            rc = -1;
        } else if (delta > 0) {
            rc = fm_health_add_counter (
                out, FM_HREC_NIC, dev, 0, rname, delta, v, FM_HCLASS_WARN);
        }
    }
    free (names);
    free (values);
    return rc;
}

static int counter (net_t *s,
                    const char *dev,
                    const char *file,
                    const char *name,
                    bool must,
                    fm_health_set_t *out)
{
    char path[512];
    char key[128];
    int64_t v, delta;

    snprintf (path, sizeof (path), "%s/%s/%s", s->dir, dev, file);
    if (!must && access (path, F_OK) < 0) {
        return 0;
    }
    if (fm_health_read_counter (s->memo, "net", path, &v) < 0) {
        return 0;
    }
    snprintf (key, sizeof (key), "%s/%s", dev, name);
    if (fm_health_memo_delta (s->memo, key, v, &delta) < 0) {
        return -1;
    }
    return fm_health_add_counter (out,
                                  FM_HREC_NIC,
                                  dev,
                                  0,
                                  name,
                                  delta,
                                  v,
                                  delta > 0 ? FM_HCLASS_WARN : FM_HCLASS_INFO);
}

static int sample_dev (net_t *s, const char *dev, fm_health_set_t *out)
{
    char path[512];
    char oper[32] = "";
    char buf[64];
    int64_t carrier = 0, speed = 0;
    bool up;
    int rc = 0;

    snprintf (path, sizeof (path), "%s/%s/operstate", s->dir, dev);
    if (fm_health_read_file (path, oper, sizeof (oper)) < 0) {
        if (fm_health_memo_note (s->memo, path)) {
            fm_warn ("health net: %s: %m", path);
        }
        return 0;
    }
    if (fm_health_memo_unnote (s->memo, path)) {
        fm_info ("health net: %s: readable again", path);
    }
    /* Virtual devices without carrier detection say "unknown": believe carrier.
     * operstate follows carrier through the kernel's linkwatch, up to a second
     * late, so a carrier that is known to be off wins.
     */
    snprintf (path, sizeof (path), "%s/%s/carrier", s->dir, dev);
    if (fm_health_read_file (path, buf, sizeof (buf)) < 0
        || fm_health_parse_u64 (buf, &carrier) < 0) {
        carrier = -1;
    }
    up = (strcmp (oper, "up") == 0 || (strcmp (oper, "unknown") == 0 && carrier == 1))
         && carrier != 0;
    /* speed reads -1, or fails with EINVAL, when the link is down or unknown */
    snprintf (path, sizeof (path), "%s/%s/speed", s->dir, dev);
    if (fm_health_read_file (path, buf, sizeof (buf)) < 0
        || fm_health_parse_u64 (buf, &speed) < 0) {
        speed = 0;
    }
    if (fm_health_add_text (out, FM_HREC_NIC, dev, 0, "operstate", oper, FM_HCLASS_INFO)
            < 0
        || fm_health_add_gauge (out,
                                FM_HREC_NIC,
                                dev,
                                0,
                                "link_up",
                                up,
                                up ? FM_HCLASS_INFO : FM_HCLASS_WARN)
               < 0
        || fm_health_add_gauge (
               out, FM_HREC_NIC, dev, 0, "speed_mbps", speed, FM_HCLASS_INFO)
               < 0) {
        return -1;
    }
    for (int i = 0; rc == 0 && required[i]; i++) {
        snprintf (path, sizeof (path), "statistics/%s", required[i]);
        rc = counter (s, dev, path, required[i], true, out);
    }
    for (int i = 0; rc == 0 && optional[i]; i++) {
        snprintf (path, sizeof (path), "statistics/%s", optional[i]);
        rc = counter (s, dev, path, optional[i], false, out);
    }
    if (rc == 0) {
        rc = counter (s, dev, "carrier_changes", "carrier_changes", true, out);
    }
    if (rc == 0 && s->sock >= 0) {
        rc = sample_ethtool (s, dev, out);
    }
    return rc;
}

static int cmp_str (const void *a, const void *b)
{
    return strcmp (*(char *const *)a, *(char *const *)b);
}

/* The devices to sample: the allow list, or every entry with a device link
 * (hardware, not lo/veth/bridges), sorted. *names NULL-terminated, malloc'd.
 */
static int list_devices (net_t *s, char ***names, fm_error_t *err)
{
    DIR *d = opendir (s->dir);
    struct dirent *e;
    char **v = NULL;
    size_t n = 0;

    if (!d) {
        return fm_errprintf (err, "%s: %s", s->dir, strerror (errno));
    }
    if (!(v = calloc (NET_DEVS_MAX + 1, sizeof (*v)))) {
        closedir (d);
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    while ((e = readdir (d)) && n < NET_DEVS_MAX) {
        char path[512];
        bool want = false;

        if (!fm_health_name_ok (e->d_name, IFNAMSIZ - 1)) {
            continue;
        }
        if (s->devices) {
            for (char **l = s->devices; *l && !want; l++) {
                want = strcmp (*l, e->d_name) == 0;
            }
        } else {
            snprintf (path, sizeof (path), "%s/%s/device", s->dir, e->d_name);
            want = access (path, F_OK) == 0;
        }
        if (want && !(v[n++] = strdup (e->d_name))) {
            fm_health_names_free (v);
            closedir (d);
            errno = ENOMEM;
            return fm_errprintf (err, "out of memory");
        }
    }
    closedir (d);
    qsort (v, n, sizeof (*v), cmp_str);
    *names = v;
    return 0;
}

static int net_sample (void *arg, fm_health_set_t *out, fm_error_t *err)
{
    net_t *s = arg;
    size_t n0 = out->n;
    char **devs = NULL;
    int rc = 0;

    if (list_devices (s, &devs, err) < 0) {
        return -1;
    }
    if (s->devices) {
        for (char **l = s->devices; *l; l++) {
            bool found = false;
            char key[64];

            for (char **d = devs; *d && !found; d++) {
                found = strcmp (*d, *l) == 0;
            }
            snprintf (key, sizeof (key), "missing:%s", *l);
            if (!found && fm_health_memo_note (s->memo, key)) {
                fm_warn ("health net: %s: no such device under %s", *l, s->dir);
            } else if (found && fm_health_memo_unnote (s->memo, key)) {
                fm_info ("health net: %s: present again", *l);
            }
        }
    }
    for (char **d = devs; *d && rc == 0; d++) {
        rc = sample_dev (s, *d, out);
    }
    fm_health_names_free (devs);
    if (rc < 0) {
        out->n = n0;
        return fm_errprintf (err, "out of memory");
    }
    return 0;
}

const fm_health_collector_t fm_health_net = {
    .name = "net",
    .init = net_init,
    .sample = net_sample,
    .fini = net_fini,
};

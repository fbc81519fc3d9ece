/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"
#include "spool.h"

#define SPOOL_SUFFIX ".json"

struct fm_spool {
    int dirfd;
    size_t max_files;
    size_t max_bytes;
    uint64_t *seqs; /* ascending */
    size_t n;
    uint64_t dropped;
};

static int cmp_u64 (const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* "<20 digits>.json" only: anything else in the directory is not ours. */
static int parse_name (const char *name, uint64_t *seq)
{
    char *end;
    unsigned long long v;

    if (name[0] < '0' || name[0] > '9') {
        return -1;
    }
    errno = 0;
    v = strtoull (name, &end, 10);
    if (errno != 0 || strcmp (end, SPOOL_SUFFIX) != 0 || end - name != 20) {
        return -1;
    }
    *seq = v;
    return 0;
}

static void file_name (uint64_t seq, char *buf, size_t len)
{
    snprintf (buf, len, "%020" PRIu64 SPOOL_SUFFIX, seq);
}

fm_spool_t *
fm_spool_open (const char *dir, size_t max_files, size_t max_bytes, fm_error_t *err)
{
    fm_spool_t *s;
    DIR *d;
    struct dirent *ent;
    int fd;

    if (max_files == 0 || max_bytes == 0) {
        errno = EINVAL;
        fm_errprintf (err, "spool limits must be positive");
        return NULL;
    }
    if (fm_path_mkdir_secure (dir, 0700, err) < 0) {
        return NULL;
    }
    if (!(s = calloc (1, sizeof (*s)))
        || !(s->seqs = calloc (max_files + 1, sizeof (uint64_t)))) {
        free (s);
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    s->max_files = max_files;
    s->max_bytes = max_bytes;
    if ((s->dirfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        fm_errprintf (err, "%s: %s", dir, strerror (errno));
        goto error;
    }
    if ((fd = dup (s->dirfd)) < 0 || !(d = fdopendir (fd))) {
        fm_errprintf (err, "%s: %s", dir, strerror (errno));
        if (fd >= 0) {
            close (fd);
        }
        goto error;
    }
    while ((ent = readdir (d))) {
        uint64_t seq;
        if (parse_name (ent->d_name, &seq) < 0) {
            continue;
        }
        if (s->n == max_files) {
            /* keep the newest max_files: replace the smallest if this is newer */
            qsort (s->seqs, s->n, sizeof (uint64_t), cmp_u64);
            if (seq > s->seqs[0]) {
                char name[32];
                file_name (s->seqs[0], name, sizeof (name));
                unlinkat (s->dirfd, name, 0);
                s->seqs[0] = seq;
            } else {
                unlinkat (s->dirfd, ent->d_name, 0);
            }
            s->dropped++;
            continue;
        }
        s->seqs[s->n++] = seq;
    }
    closedir (d);
    qsort (s->seqs, s->n, sizeof (uint64_t), cmp_u64);
    return s;
error:
    fm_spool_destroy (s);
    return NULL;
}

void fm_spool_destroy (fm_spool_t *s)
{
    if (s) {
        int saved = errno;
        if (s->dirfd >= 0) {
            close (s->dirfd);
        }
        free (s->seqs);
        free (s);
        errno = saved;
    }
}

static ssize_t find (const fm_spool_t *s, uint64_t seq)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->seqs[i] == seq) {
            return (ssize_t)i;
        }
    }
    return -1;
}

int fm_spool_remove (fm_spool_t *s, uint64_t seq)
{
    char name[32];
    ssize_t i = find (s, seq);

    if (i < 0) {
        errno = ENOENT;
        return -1;
    }
    file_name (seq, name, sizeof (name));
    if (unlinkat (s->dirfd, name, 0) < 0 && errno != ENOENT) {
        return -1;
    }
    memmove (&s->seqs[i], &s->seqs[i + 1], (s->n - (size_t)i - 1) * sizeof (uint64_t));
    s->n--;
    return 0;
}

int fm_spool_put (fm_spool_t *s, uint64_t seq, const char *text, fm_error_t *err)
{
    char name[32], tmp[48];
    size_t len = strlen (text);
    int fd;
    ssize_t i;

    if (len > s->max_bytes) {
        errno = EFBIG;
        return fm_errprintf (err,
                             "window %" PRIu64 " is %zu bytes, over the spool's %zu",
                             seq,
                             len,
                             s->max_bytes);
    }
    if (find (s, seq) >= 0 || (s->n > 0 && seq < s->seqs[s->n - 1])) {
        errno = EEXIST;
        return fm_errprintf (
            err, "window %" PRIu64 " is not newer than the spool", seq);
    }
    file_name (seq, name, sizeof (name));
    snprintf (tmp, sizeof (tmp), ".%s.tmp", name);
    fd = openat (
        s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        return fm_errprintf (err, "spool: %s: %s", tmp, strerror (errno));
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = write (fd, text + off, len - off);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            fm_errprintf (err, "spool: write: %s", strerror (errno));
            goto fail;
        }
        off += (size_t)w;
    }
    if (close (fd) < 0) {
        fd = -1;
        fm_errprintf (err, "spool: close: %s", strerror (errno));
        goto fail;
    }
    fd = -1;
    /* a crash leaves either the complete window or none of it */
    if (renameat (s->dirfd, tmp, s->dirfd, name) < 0) {
        fm_errprintf (err, "spool: rename: %s", strerror (errno));
        goto fail;
    }
    if (s->n == s->max_files) {
        fm_spool_remove (s, s->seqs[0]);
        s->dropped++;
    }
    i = (ssize_t)s->n;
    s->seqs[i] = seq;
    s->n++;
    return 0;
fail:
    if (fd >= 0) {
        close (fd);
    }
    unlinkat (s->dirfd, tmp, 0);
    return -1;
}

size_t fm_spool_count (const fm_spool_t *s)
{
    return s->n;
}

size_t fm_spool_oldest (const fm_spool_t *s, uint64_t *seqs, size_t n)
{
    if (n > s->n) {
        n = s->n;
    }
    memcpy (seqs, s->seqs, n * sizeof (uint64_t));
    return n;
}

int64_t fm_spool_last (const fm_spool_t *s)
{
    return s->n > 0 ? (int64_t)s->seqs[s->n - 1] : -1;
}

char *fm_spool_get (fm_spool_t *s, uint64_t seq)
{
    char name[32];
    struct stat sb;
    char *buf = NULL;
    size_t off = 0;
    int fd;

    if (find (s, seq) < 0) {
        errno = ENOENT;
        return NULL;
    }
    file_name (seq, name, sizeof (name));
    if ((fd = openat (s->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        return NULL;
    }
    if (fstat (fd, &sb) < 0) {
        goto fail;
    }
    if (!S_ISREG (sb.st_mode) || (size_t)sb.st_size > s->max_bytes) {
        errno = EFBIG;
        goto fail;
    }
    if (!(buf = malloc ((size_t)sb.st_size + 1))) {
        goto fail;
    }
    while (off < (size_t)sb.st_size) {
        ssize_t r = read (fd, buf + off, (size_t)sb.st_size - off);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            if (r == 0) {
                errno = EIO;
            }
            goto fail;
        }
        off += (size_t)r;
    }
    buf[off] = '\0';
    close (fd);
    return buf;
fail : {
    int saved = errno;
    free (buf);
    close (fd);
    errno = saved;
    return NULL;
}
}

uint64_t fm_spool_dropped (const fm_spool_t *s)
{
    return s->dropped;
}

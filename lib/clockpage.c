/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clockpage.h"

struct fm_clockpage {
    struct fm_clockpage_layout *pg;
    size_t maplen;
    int fd;
    bool is_path;
    char name[PATH_MAX];
};

#define STORE(field, val) __atomic_store_n (&pg->field, (val), __ATOMIC_RELAXED)

static int open_page (const char *name, bool is_path, int flags)
{
    if (is_path) {
        return open (name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | flags, 0644);
    }
    return shm_open (name, O_RDWR | flags, 0644);
}

static void remove_name (const char *name, bool is_path)
{
    if (is_path) {
        (void)unlink (name);
    } else {
        (void)shm_unlink (name);
    }
}

/* The record under the seqlock; magic and version are rewritten each time so
 * a page taken over from a crashed or older writer becomes whole again.
 */
static void write_record (struct fm_clockpage_layout *pg,
                          const fm_clockpage_data_t *d,
                          uint64_t generation)
{
    uint32_t seq = __atomic_load_n (&pg->seq, __ATOMIC_RELAXED);
    uint64_t bits;

    /* a writer that died inside leaves seq odd: step past it */
    seq = (seq | 1u) + 1u;
    __atomic_store_n (&pg->seq, seq - 1u, __ATOMIC_RELAXED);
    __atomic_thread_fence (__ATOMIC_RELEASE);
    memcpy (&bits, &d->drift_ppb, sizeof (bits));
    STORE (magic, FM_CLOCKPAGE_MAGIC);
    STORE (version, FM_CLOCKPAGE_VERSION);
    STORE (size, (uint32_t)sizeof (*pg));
    STORE (flags, d->valid ? (uint32_t)FM_CLOCKPAGE_VALID : 0u);
    STORE (ref_node, d->ref_node);
    STORE (generation, generation);
    STORE (epoch_ns, d->epoch_ns);
    STORE (offset_ns, d->offset_ns);
    STORE (drift_bits, bits);
    STORE (bound_ns, d->bound_ns);
    STORE (bound_rate_ppb, d->bound_rate_ppb);
    STORE (ref_epoch_ns, d->ref_epoch_ns);
    STORE (valid_until_ns, d->valid_until_ns);
    __atomic_store_n (&pg->seq, seq, __ATOMIC_RELEASE);
}

fm_clockpage_t *fm_clockpage_create (const char *job, fm_error_t *err)
{
    fm_clockpage_t *p;
    fm_clockpage_data_t none = {.valid = false};
    struct stat st;
    long psz = sysconf (_SC_PAGESIZE);
    bool created = true;
    int saved;

    if (!(p = calloc (1, sizeof (*p)))) {
        fm_errprintf (err, "clock page: out of memory");
        return NULL;
    }
    p->fd = -1;
    if (fm_clockpage_name (job, p->name, sizeof (p->name), &p->is_path) < 0) {
        errno = EINVAL;
        fm_errprintf (err, "clock page: bad job id or path");
        goto fail;
    }
    p->maplen =
        psz > 0 && (size_t)psz > sizeof (*p->pg) ? (size_t)psz : sizeof (*p->pg);
    p->fd = open_page (p->name, p->is_path, O_CREAT | O_EXCL);
    if (p->fd < 0 && errno == EEXIST) {
        created = false;
        p->fd = open_page (p->name, p->is_path, 0);
    }
    if (p->fd < 0) {
        fm_errprintf (err, "clock page %s: %s", p->name, strerror (errno));
        goto fail;
    }
    if (fstat (p->fd, &st) < 0) {
        fm_errprintf (err, "clock page %s: %s", p->name, strerror (errno));
        goto fail;
    }
    /* readers trust the page's owner: never adopt somebody else's */
    if (!S_ISREG (st.st_mode) || st.st_uid != geteuid ()) {
        errno = EEXIST;
        fm_errprintf (err, "clock page %s exists and is not ours", p->name);
        goto fail;
    }
    if (fchmod (p->fd, 0644) < 0 || ftruncate (p->fd, (off_t)p->maplen) < 0) {
        fm_errprintf (err, "clock page %s: %s", p->name, strerror (errno));
        goto fail;
    }
    p->pg = mmap (NULL, p->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (p->pg == MAP_FAILED) {
        p->pg = NULL;
        fm_errprintf (err, "clock page %s: mmap: %s", p->name, strerror (errno));
        goto fail;
    }
    write_record (
        p->pg, &none, __atomic_load_n (&p->pg->generation, __ATOMIC_RELAXED) + 1);
    return p;
fail:
    saved = errno;
    if (p->fd >= 0) {
        if (created) {
            remove_name (p->name, p->is_path);
        }
        (void)close (p->fd);
    }
    free (p);
    errno = saved;
    return NULL;
}

int fm_clockpage_publish (fm_clockpage_t *p, const fm_clockpage_data_t *d)
{
    /* a reader cannot tell a nonsensical record from a good one: refuse it */
    if (!p || !d || d->bound_ns < 0 || d->bound_rate_ppb < 0
        || !(d->drift_ppb >= -1e9 && d->drift_ppb <= 1e9)
        || (d->valid && d->valid_until_ns <= d->epoch_ns)) {
        errno = EINVAL;
        return -1;
    }
    write_record (p->pg, d, __atomic_load_n (&p->pg->generation, __ATOMIC_RELAXED) + 1);
    return 0;
}

int fm_clockpage_invalidate (fm_clockpage_t *p)
{
    struct fm_clockpage_layout *pg;
    fm_clockpage_data_t d;
    uint64_t bits;

    if (!p) {
        errno = EINVAL;
        return -1;
    }
    /* the writer is the only one to change the record: plain reads suffice */
    pg = p->pg;
    d.valid = false;
    d.ref_node = pg->ref_node;
    d.epoch_ns = pg->epoch_ns;
    d.offset_ns = pg->offset_ns;
    bits = pg->drift_bits;
    memcpy (&d.drift_ppb, &bits, sizeof (bits));
    d.bound_ns = pg->bound_ns;
    d.bound_rate_ppb = pg->bound_rate_ppb;
    d.ref_epoch_ns = pg->ref_epoch_ns;
    d.valid_until_ns = pg->valid_until_ns;
    return fm_clockpage_publish (p, &d);
}

void fm_clockpage_destroy (fm_clockpage_t *p, bool unlink_name)
{
    int saved = errno;

    if (p) {
        if (p->pg) {
            (void)munmap (p->pg, p->maplen);
        }
        if (unlink_name) {
            remove_name (p->name, p->is_path);
        }
        (void)close (p->fd);
        free (p);
    }
    errno = saved;
}

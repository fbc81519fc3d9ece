/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fm/clock.h"
#include "clockpage.h"

/* libfmclock: the reader of the job timeline page. It stands alone (no libfm)
 * so that it can be installed and linked by any program.
 */

/* Retries before a reader gives up on a page whose writer seems stuck
 * inside a write (it died there): a write takes well under a microsecond.
 */
#define READ_SPINS 64
#define READ_YIELDS 1000

struct fm_clock {
    const struct fm_clockpage_layout *pg;
    size_t maplen;
};

#define LOAD(field) __atomic_load_n (&pg->field, __ATOMIC_RELAXED)

fm_clock_t *fm_clock_open (const char *job)
{
    char name[PATH_MAX];
    bool is_path;
    struct stat st;
    fm_clock_info_t info;
    fm_clock_t *clk;
    void *map;
    int fd, saved;

    if (fm_clockpage_name (job, name, sizeof (name), &is_path) < 0) {
        errno = EINVAL;
        return NULL;
    }
    fd = is_path ? open (name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                 : shm_open (name, O_RDONLY, 0);
    if (fd < 0) {
        return NULL;
    }
    if (fstat (fd, &st) < 0) {
        goto fail;
    }
    /* whoever can write the page decides what time it is for this process */
    if (!S_ISREG (st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH))
        || (st.st_uid != 0 && st.st_uid != geteuid ())) {
        errno = EACCES;
        goto fail;
    }
    if ((size_t)st.st_size < sizeof (struct fm_clockpage_layout)) {
        errno = EPROTO;
        goto fail;
    }
    map =
        mmap (NULL, sizeof (struct fm_clockpage_layout), PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        goto fail;
    }
    (void)close (fd);
    if (!(clk = calloc (1, sizeof (*clk)))) {
        saved = errno;
        (void)munmap (map, sizeof (struct fm_clockpage_layout));
        errno = saved;
        return NULL;
    }
    clk->pg = map;
    clk->maplen = sizeof (struct fm_clockpage_layout);
    /* a foreign format is refused now; no estimate yet (EAGAIN) is fine */
    if (fm_clock_info (clk, &info) < 0 && errno == EPROTO) {
        fm_clock_close (clk);
        errno = EPROTO;
        return NULL;
    }
    return clk;
fail:
    saved = errno;
    (void)close (fd);
    errno = saved;
    return NULL;
}

void fm_clock_close (fm_clock_t *clk)
{
    int saved = errno;

    if (clk) {
        (void)munmap ((void *)clk->pg, clk->maplen);
        free (clk);
    }
    errno = saved;
}

int fm_clock_info (fm_clock_t *clk, fm_clock_info_t *info)
{
    const struct fm_clockpage_layout *pg;
    uint32_t magic, version, size, flags;
    fm_clock_info_t v;
    uint64_t bits;

    if (!clk || !info) {
        errno = EINVAL;
        return -1;
    }
    pg = clk->pg;
    for (unsigned tries = 0; tries < READ_SPINS + READ_YIELDS; tries++) {
        uint32_t s1 = __atomic_load_n (&pg->seq, __ATOMIC_ACQUIRE);

        if (!(s1 & 1u)) {
            magic = LOAD (magic);
            version = LOAD (version);
            size = LOAD (size);
            flags = LOAD (flags);
            v.ref_node = LOAD (ref_node);
            v.generation = LOAD (generation);
            v.epoch_ns = LOAD (epoch_ns);
            v.offset_ns = LOAD (offset_ns);
            bits = LOAD (drift_bits);
            v.bound_ns = LOAD (bound_ns);
            v.bound_rate_ppb = LOAD (bound_rate_ppb);
            v.ref_epoch_ns = LOAD (ref_epoch_ns);
            v.valid_until_ns = LOAD (valid_until_ns);
            __atomic_thread_fence (__ATOMIC_ACQUIRE);
            if (__atomic_load_n (&pg->seq, __ATOMIC_RELAXED) == s1) {
                if (magic == 0 && version == 0) {
                    errno = EAGAIN; /* created, not yet written */
                    return -1;
                }
                if (magic != FM_CLOCKPAGE_MAGIC || version != FM_CLOCKPAGE_VERSION
                    || size != sizeof (*pg)) {
                    errno = EPROTO;
                    return -1;
                }
                memcpy (&v.drift_ppb, &bits, sizeof (bits));
                v.valid = flags & FM_CLOCKPAGE_VALID;
                *info = v;
                return 0;
            }
        }
        if (tries >= READ_SPINS) {
            sched_yield ();
        }
    }
    errno = EAGAIN;
    return -1;
}

/* |x| as unsigned, defined for INT64_MIN too */
static uint64_t uabs (int64_t x)
{
    return x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
}

int fm_clock_now (fm_clock_t *clk, struct timespec *ts, uint64_t *bound_ns)
{
    fm_clock_info_t v;
    struct timespec now;
    int64_t host, dt, job, corr;
    double c, grow, b;

    if (!clk) {
        errno = EINVAL;
        return -1;
    }
    if (fm_clock_info (clk, &v) < 0) {
        return -1;
    }
    if (!v.valid) {
        errno = EAGAIN;
        return -1;
    }
    if (clock_gettime (CLOCK_REALTIME, &now) < 0) {
        return -1;
    }
    host = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    if (host > v.valid_until_ns) {
        errno = ESTALE;
        return -1;
    }
    if (__builtin_sub_overflow (host, v.epoch_ns, &dt)) {
        errno = ESTALE;
        return -1;
    }
    c = v.drift_ppb * 1e-9 * (double)dt;
    if (!(c > -4e18 && c < 4e18)) {
        errno = ERANGE;
        return -1;
    }
    /* no libm: round half away from zero by hand */
    corr = (int64_t)(c < 0 ? c - 0.5 : c + 0.5);
    if (__builtin_add_overflow (host, v.offset_ns, &job)
        || __builtin_add_overflow (job, corr, &job) || job < 0) {
        errno = ERANGE;
        return -1;
    }
    /* the writer refuses negative bounds; a reader does not rely on it */
    grow = (double)(v.bound_rate_ppb > 0 ? v.bound_rate_ppb : 0) * 1e-9
           * (double)uabs (dt);
    b = (double)(v.bound_ns > 0 ? v.bound_ns : 0) + grow;
    if (ts) {
        ts->tv_sec = (time_t)(job / 1000000000LL);
        ts->tv_nsec = (long)(job % 1000000000LL);
    }
    if (bound_ns) {
        *bound_ns = b >= 1.8e19 ? UINT64_MAX : (uint64_t)(b + 0.999999);
    }
    return 0;
}

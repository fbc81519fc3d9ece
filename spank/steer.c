/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin.h"

/* Steering NCCL/RCCL off degraded rails (doc/health.md "Steering"). The
 * node's agent decides which HCA ports are degraded and writes them to a file
 * in the job's directory on this node; here, at the start of every task (as
 * the job's user, in slurmstepd), the file becomes NCCL_IB_HCA=^=... A user who
 * set NCCL_IB_HCA chose the HCAs: that choice is kept as it is.
 */

int fm_spank_steer_parse (const char *text, char *value, size_t size)
{
    size_t len = strcspn (text, "\n");
    bool port = false;

    if (text[len] == '\n' && text[len + 1] != '\0') {
        errno = EINVAL; /* one line only */
        return -1;
    }
    if (len == 0) {
        return 0;
    }
    /* DEVICE:PORT[,DEVICE:PORT...] with the characters of RDMA device names */
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        bool name = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
        if (c == ':') {
            if (port || i == 0 || text[i - 1] == ',' || i + 1 == len) {
                errno = EINVAL;
                return -1;
            }
            port = true;
        } else if (c == ',') {
            if (!port || text[i - 1] == ':') {
                errno = EINVAL;
                return -1;
            }
            port = false;
        } else if (!name || (port && (c < '0' || c > '9'))) {
            errno = EINVAL;
            return -1;
        }
    }
    if (!port) {
        errno = EINVAL;
        return -1;
    }
    /* "^" excludes, "=" matches names exactly (mlx5_1 is not mlx5_10) */
    if ((size_t)snprintf (value, size, "^=%.*s", (int)len, text) >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 1;
}

/* The agent's file, or -1: absent (no steering), or not one the root agent
 * wrote (owner, type, size), which is then ignored.
 */
static int read_steer_file (const char *path, char *buf, size_t size)
{
    struct stat sb;
    ssize_t n;
    int fd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0) {
        return -1;
    }
    if (fstat (fd, &sb) < 0 || !S_ISREG (sb.st_mode) || sb.st_uid != 0
        || (size_t)sb.st_size >= size) {
        close (fd);
        errno = EPERM;
        return -1;
    }
    n = read (fd, buf, size - 1);
    close (fd);
    if (n < 0) {
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

int fm_spank_steer_task (spank_t sp)
{
    char node[64], dir[512], path[600], text[FM_SPANK_STEER_MAX],
        value[FM_SPANK_STEER_MAX + 2];
    char user[FM_SPANK_STEER_MAX + 2];
    uint32_t job_id;
    int rc;

    if (spank_get_item (sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS
        || spank_getenv (sp, "SLURMD_NODENAME", node, sizeof (node)) != ESPANK_SUCCESS
        || fm_plugin_jobdir (node, job_id, dir, sizeof (dir)) < 0) {
        return 0;
    }
    snprintf (path, sizeof (path), "%s/" FM_SPANK_STEER_FILE, dir);
    if (read_steer_file (path, text, sizeof (text)) < 0) {
        if (errno != ENOENT) {
            fm_spank_verbose ("job %u: %s: %s", job_id, path, strerror (errno));
        }
        return 0;
    }
    if ((rc = fm_spank_steer_parse (text, value, sizeof (value))) <= 0) {
        if (rc < 0) {
            fm_spank_verbose ("job %u: %s: malformed", job_id, path);
        }
        return 0;
    }
    rc = spank_getenv (sp, "NCCL_IB_HCA", user, sizeof (user));
    if (rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE) {
        fm_spank_verbose ("job %u: NCCL_IB_HCA set by the job: degraded %s not "
                          "excluded",
                          job_id,
                          value + 2);
        return 0;
    }
    if (spank_setenv (sp, "NCCL_IB_HCA", value, 0) != ESPANK_SUCCESS) {
        fm_spank_verbose ("job %u: cannot set NCCL_IB_HCA", job_id);
        return 0;
    }
    fm_spank_verbose (
        "job %u: NCCL_IB_HCA=%s (degraded HCA ports of %s)", job_id, value, node);
    return 0;
}

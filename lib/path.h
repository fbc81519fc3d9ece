/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_PATH_H
#define FM_PATH_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

typedef enum {
    FM_PATH_NO_SYMLINK = 1,   /* the final component must not be a symbolic link */
    FM_PATH_NO_GROUP_READ = 2,/* the file itself must not be readable by group/other (keys) */
    FM_PATH_MUST_EXIST = 4,
} fm_path_flags_b;

/* munge-style check that `path` cannot be altered by anyone but root or
 * `owner`: the file (when it exists) and every directory above it must be owned
 * by root or owner and not writable by group or other (a directory with the
 * sticky bit set may be world-writable). path must be absolute.
 * Returns 0 if secure, else -1 with errno (EPERM insecure, ENOENT, ENOTDIR,
 * EINVAL, ENAMETOOLONG) and the offending component and reason in err.
 * A missing file passes unless FM_PATH_MUST_EXIST; a missing directory above
 * it does not. A symbolic link (when allowed) is followed: its target and the
 * directories above the target are checked too; a dangling link is ENOENT.
 */
int fm_path_check_secure (const char *path, uid_t owner, int flags, fm_error_t *err);

/* Create directory `path` (and missing parents) with `mode`, owned by the caller;
 * an existing directory must pass fm_path_check_secure. 0 or -1/errno + err.
 * mode is applied exactly (not masked by the umask); parents also get u+rwx.
 * A mode with group/other write and no sticky bit is EINVAL. The deepest
 * existing ancestor is checked first, so nothing is created under an insecure
 * tree; on a later failure the directories created are removed.
 */
int fm_path_mkdir_secure (const char *path, mode_t mode, fm_error_t *err);

#endif /* FM_PATH_H */

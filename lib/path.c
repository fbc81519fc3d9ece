/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"

/* Copy path without trailing slashes ("/" stays "/"). */
static int normalize (const char *path, char *buf, fm_error_t *err)
{
    size_t len;

    if (!path || path[0] != '/') {
        errno = EINVAL;
        return fm_errprintf (err, "'%s': not an absolute path", path ? path : "(null)");
    }
    len = strlen (path);
    if (len >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return fm_errprintf (err, "path longer than %d bytes", PATH_MAX - 1);
    }
    memcpy (buf, path, len + 1);
    while (len > 1 && buf[len - 1] == '/') {
        buf[--len] = '\0';
    }
    return 0;
}

/* The owner and mode rule for one existing object. */
static int
check_stat (const char *name, const struct stat *sb, uid_t owner, fm_error_t *err)
{
    if (sb->st_uid != 0 && sb->st_uid != owner) {
        errno = EPERM;
        return fm_errprintf (err,
                             "'%s': owned by uid %u, not root or uid %u",
                             name,
                             (unsigned)sb->st_uid,
                             (unsigned)owner);
    }
    /* a sticky directory (like /tmp) lets others add entries but not replace ours */
    if ((sb->st_mode & (S_IWGRP | S_IWOTH))
        && !(S_ISDIR (sb->st_mode) && (sb->st_mode & S_ISVTX))) {
        errno = EPERM;
        return fm_errprintf (err, "'%s': writable by group or other", name);
    }
    return 0;
}

/* Check "/" and every directory on the way down to dir (inclusive). Symbolic
 * links met on the way are not judged themselves: their containing directory
 * is, and the caller walks the resolved path as well.
 */
static int check_dirs (const char *dir, uid_t owner, fm_error_t *err)
{
    char buf[PATH_MAX];
    size_t len = strlen (dir);
    struct stat sb;

    if (lstat ("/", &sb) < 0) {
        return fm_errprintf (err, "'/': %s", strerror (errno));
    }
    if (check_stat ("/", &sb, owner, err) < 0) {
        return -1;
    }
    memcpy (buf, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        char saved = buf[i];

        /* at the end of each non-empty component */
        if ((saved != '/' && saved != '\0') || buf[i - 1] == '/') {
            continue;
        }
        buf[i] = '\0';
        if (lstat (buf, &sb) < 0) {
            return fm_errprintf (err, "'%s': %s", buf, strerror (errno));
        }
        if (!S_ISLNK (sb.st_mode)) {
            if (!S_ISDIR (sb.st_mode)) {
                errno = ENOTDIR;
                return fm_errprintf (err, "'%s': not a directory", buf);
            }
            if (check_stat (buf, &sb, owner, err) < 0) {
                return -1;
            }
        }
        buf[i] = saved;
    }
    return 0;
}

/* Check the directory part of path, both as written and resolved. */
static int check_parents (const char *path, uid_t owner, fm_error_t *err)
{
    char dir[PATH_MAX];
    char real[PATH_MAX];
    char *slash;

    strcpy (dir, path);
    slash = strrchr (dir, '/');
    if (slash == dir) {
        dir[1] = '\0';
    } else {
        *slash = '\0';
    }
    if (check_dirs (dir, owner, err) < 0) {
        return -1;
    }
    if (!realpath (dir, real)) {
        return fm_errprintf (err, "'%s': %s", dir, strerror (errno));
    }
    return check_dirs (real, owner, err);
}

int fm_path_check_secure (const char *path, uid_t owner, int flags, fm_error_t *err)
{
    char buf[PATH_MAX];
    char real[PATH_MAX];
    const char *name = buf; /* what the checks below are about */
    struct stat sb;

    if (normalize (path, buf, err) < 0) {
        return -1;
    }
    if (strcmp (buf, "/") != 0 && check_parents (buf, owner, err) < 0) {
        return -1;
    }
    if (lstat (buf, &sb) < 0) {
        if (errno == ENOENT && !(flags & FM_PATH_MUST_EXIST)) {
            return 0;
        }
        return fm_errprintf (err, "'%s': %s", buf, strerror (errno));
    }
    if (S_ISLNK (sb.st_mode)) {
        if (flags & FM_PATH_NO_SYMLINK) {
            errno = EPERM;
            return fm_errprintf (err, "'%s': is a symbolic link", buf);
        }
        /* the target and the directories above it must be as safe as the link */
        if (!realpath (buf, real) || stat (real, &sb) < 0) {
            return fm_errprintf (
                err, "'%s': cannot resolve symbolic link: %s", buf, strerror (errno));
        }
        if (strcmp (real, "/") != 0 && check_parents (real, owner, err) < 0) {
            return -1;
        }
        name = real;
    }
    if (check_stat (name, &sb, owner, err) < 0) {
        return -1;
    }
    if ((flags & FM_PATH_NO_GROUP_READ) && (sb.st_mode & (S_IRGRP | S_IROTH))) {
        errno = EPERM;
        return fm_errprintf (err, "'%s': readable by group or other", name);
    }
    return 0;
}

int fm_path_mkdir_secure (const char *path, mode_t mode, fm_error_t *err)
{
    char buf[PATH_MAX];
    char anc[PATH_MAX];
    size_t ends[PATH_MAX / 2]; /* ends of the components we created */
    size_t ncreated = 0;
    size_t len;
    struct stat sb;
    uid_t self = geteuid ();
    int saved_errno;

    if (normalize (path, buf, err) < 0) {
        return -1;
    }
    if ((mode & (S_IWGRP | S_IWOTH)) && !(mode & S_ISVTX)) {
        errno = EINVAL;
        return fm_errprintf (
            err, "'%s': mode %04o allows group or other write", buf, (unsigned)mode);
    }
    if (stat (buf, &sb) == 0) {
        if (!S_ISDIR (sb.st_mode)) {
            errno = ENOTDIR;
            return fm_errprintf (err, "'%s': not a directory", buf);
        }
        return fm_path_check_secure (buf, self, FM_PATH_MUST_EXIST, err);
    }
    if (errno != ENOENT) {
        return fm_errprintf (err, "'%s': %s", buf, strerror (errno));
    }
    /* Vet the deepest existing ancestor before creating anything, so that an
     * insecure tree is refused without side effects.
     */
    strcpy (anc, buf);
    while (stat (anc, &sb) < 0) {
        char *slash;
        if (errno != ENOENT) {
            return fm_errprintf (err, "'%s': %s", anc, strerror (errno));
        }
        slash = strrchr (anc, '/');
        slash[slash == anc ? 1 : 0] = '\0';
    }
    if (!S_ISDIR (sb.st_mode)) {
        errno = ENOTDIR;
        return fm_errprintf (err, "'%s': not a directory", anc);
    }
    if (fm_path_check_secure (anc, self, FM_PATH_MUST_EXIST, err) < 0) {
        return -1;
    }
    len = strlen (buf);
    for (size_t i = strlen (anc) + 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0') {
            continue;
        }
        if (buf[i - 1] == '/') {
            continue; /* "//" */
        }
        char saved = buf[i];
        bool last = i == len;
        /* parents get u+wx so that the rest of the path can be created */
        mode_t m = last ? mode : mode | S_IRWXU;
        buf[i] = '\0';
        if (mkdir (buf, m) < 0) {
            if (errno != EEXIST) {
                fm_errprintf (err, "'%s': %s", buf, strerror (errno));
                buf[i] = saved;
                goto undo;
            }
        } else {
            ends[ncreated++] = i;
            /* mkdir applies the umask; the caller asked for this exact mode */
            if (chmod (buf, m) < 0) {
                fm_errprintf (err, "'%s': %s", buf, strerror (errno));
                buf[i] = saved;
                goto undo;
            }
        }
        buf[i] = saved;
    }
    if (fm_path_check_secure (buf, self, FM_PATH_MUST_EXIST, err) < 0) {
        goto undo;
    }
    return 0;
undo:
    saved_errno = errno;
    while (ncreated > 0) {
        buf[ends[--ncreated]] = '\0';
        (void)rmdir (buf);
    }
    errno = saved_errno;
    return -1;
}

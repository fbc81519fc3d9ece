/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Replays inputs through a fuzz target where libFuzzer is not linked (gcc, or
 * a clang without it): each argument is a file, or a directory whose regular
 * files are run in name order. A crash or a broken invariant aborts; a file
 * that cannot be read is an error (exit 1); otherwise exit 0.
 *
 * Targets that need no setup do not define LLVMFuzzerInitialize.
 */
__attribute__ ((weak)) int LLVMFuzzerInitialize (int *argc, char ***argv);

/* Corpus files are small by construction: a big one is a mistake to report. */
#define INPUT_MAX (1 << 24)

static int run_file (const char *path)
{
    FILE *fp = fopen (path, "rb");
    struct stat st;
    uint8_t *buf;
    size_t n;

    if (!fp || fstat (fileno (fp), &st) < 0) {
        fprintf (stderr, "%s: %s\n", path, strerror (errno));
        if (fp) {
            fclose (fp);
        }
        return -1;
    }
    if (st.st_size > INPUT_MAX) {
        fprintf (stderr, "%s: larger than %d bytes\n", path, INPUT_MAX);
        fclose (fp);
        return -1;
    }
    /* Exactly the input's size, so that ASan sees a read past its end. */
    if (!(buf = malloc (st.st_size > 0 ? (size_t)st.st_size : 1))) {
        fprintf (stderr, "%s: out of memory\n", path);
        fclose (fp);
        return -1;
    }
    n = fread (buf, 1, (size_t)st.st_size, fp);
    if (ferror (fp) || n != (size_t)st.st_size) {
        fprintf (stderr, "%s: read error\n", path);
        fclose (fp);
        free (buf);
        return -1;
    }
    fclose (fp);
    LLVMFuzzerTestOneInput (buf, n);
    free (buf);
    return 0;
}

static int cmp (const void *a, const void *b)
{
    return strcmp (*(char *const *)a, *(char *const *)b);
}

static int run_dir (const char *dir, size_t *count)
{
    DIR *d = opendir (dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (!d) {
        fprintf (stderr, "%s: %s\n", dir, strerror (errno));
        return -1;
    }
    while ((e = readdir (d))) {
        if (e->d_name[0] == '.') {
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            char **nn = realloc (names, ncap * sizeof (*nn));
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
            cap = ncap;
        }
        if (!(names[n] = malloc (strlen (dir) + strlen (e->d_name) + 2))) {
            rc = -1;
            break;
        }
        sprintf (names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir (d);
    if (n > 0) {
        qsort (names, n, sizeof (*names), cmp);
    }
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat (names[i], &st) == 0 && S_ISREG (st.st_mode)) {
            if (run_file (names[i]) < 0) {
                rc = -1;
            } else {
                (*count)++;
            }
        }
        free (names[i]);
    }
    free (names);
    return rc;
}

int main (int argc, char **argv)
{
    size_t count = 0;
    int rc = 0;

    if (argc < 2) {
        fprintf (stderr, "Usage: %s FILE-OR-DIR...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize) {
        LLVMFuzzerInitialize (&argc, &argv);
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat (argv[i], &st) < 0) {
            fprintf (stderr, "%s: %s\n", argv[i], strerror (errno));
            rc = 1;
        } else if (S_ISDIR (st.st_mode)) {
            if (run_dir (argv[i], &count) < 0) {
                rc = 1;
            }
        } else if (run_file (argv[i]) < 0) {
            rc = 1;
        } else {
            count++;
        }
    }
    printf ("%s: %zu inputs\n", argv[0], count);
    return rc;
}

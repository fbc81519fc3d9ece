/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_FUZZ_H
#define FM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Every target defines the libFuzzer entry point; driver.c supplies main()
 * where libFuzzer is not linked. A target returns 0 (or -1: libFuzzer keeps the
 * input out of its corpus).
 */
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Optional one-time setup, called before the first input. */
int LLVMFuzzerInitialize (int *argc, char ***argv);

/* A broken invariant is a finding: abort so that libFuzzer saves the input and
 * the driver's test fails, both under any build type (not assert: NDEBUG).
 */
#define fuzz_check(cond)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf (                                                                  \
                stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);   \
            abort ();                                                                  \
        }                                                                              \
    } while (0)

/* A NUL-terminated malloc'd copy of data (stopping at an embedded NUL, as a C
 * string caller would); aborts on ENOMEM, which is not a finding.
 */
char *fuzz_strndup (const uint8_t *data, size_t size);

/* Take the next field, up to (not including) sep or the end, from *data; the
 * copy is NUL-terminated and malloc'd. Lets one input carry several strings.
 */
char *fuzz_field (const uint8_t **data, size_t *size, char sep);

#endif /* FM_FUZZ_H */

/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

/* A stand-in for libamd_smi.so, built only for tests and loaded through the
 * same dlopen path as the real library. It answers from the script named by
 * $FM_FAKE_AMDSMI, read again on every call. Lines (GPUs are indexes from 0,
 * one per socket):
 *   init RC                          amdsmi_init returns RC
 *   gpu I DOMAIN BUS DEV FUNC        a GPU (hex PCI address)
 *   ecc I CORRECTABLE UNCORRECTABLE DEFERRED
 *   xgmi I STATUS                    0 no errors, 1 error, 2 multiple errors
 * A query without a line answers AMDSMI_STATUS_NOT_SUPPORTED (2).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXGPU 8

typedef struct {
    uint64_t correctable_count;
    uint64_t uncorrectable_count;
    uint64_t deferred_count;
    uint64_t reserved[5];
} amdsmi_error_count_t;

typedef struct {
    bool present, has_ecc, has_xgmi;
    unsigned int domain, bus, dev, func;
    unsigned long long ecc[3];
    int xgmi;
} fake_gpu_t;

static struct {
    int init_rc;
    fake_gpu_t gpu[MAXGPU];
    unsigned int ngpu;
} S;

/* Sockets and processors are both pointers into this array. */
static int tokens[MAXGPU];

int amdsmi_init (uint64_t flags);
int amdsmi_shut_down (void);
int amdsmi_get_socket_handles (uint32_t *n, void **sockets);
int amdsmi_get_processor_handles (void *socket, uint32_t *n, void **procs);
int amdsmi_get_gpu_device_bdf (void *proc, uint64_t *bdf);
int amdsmi_get_gpu_total_ecc_count (void *proc, amdsmi_error_count_t *ec);
int amdsmi_gpu_xgmi_error_status (void *proc, int *status);
int amdsmi_status_code_to_string (int rc, const char **s);

static void load (void)
{
    const char *path = getenv ("FM_FAKE_AMDSMI");
    char line[256];
    FILE *f;

    memset (&S, 0, sizeof (S));
    if (!path || !(f = fopen (path, "r"))) {
        return;
    }
    while (fgets (line, sizeof (line), f)) {
        unsigned int i, a, b, c, d;
        unsigned long long x[3];
        int st;

        if (sscanf (line, "init %d", &S.init_rc) == 1) {
            continue;
        }
        if (sscanf (line, "gpu %u %x %x %x %x", &i, &a, &b, &c, &d) == 5
            && i < MAXGPU) {
            S.gpu[i].present = true;
            S.gpu[i].domain = a;
            S.gpu[i].bus = b;
            S.gpu[i].dev = c;
            S.gpu[i].func = d;
            S.ngpu = i + 1 > S.ngpu ? i + 1 : S.ngpu;
        } else if (sscanf (line, "ecc %u %llu %llu %llu", &i, &x[0], &x[1], &x[2]) == 4
                   && i < MAXGPU) {
            S.gpu[i].has_ecc = true;
            memcpy (S.gpu[i].ecc, x, sizeof (x));
        } else if (sscanf (line, "xgmi %u %d", &i, &st) == 2 && i < MAXGPU) {
            S.gpu[i].has_xgmi = true;
            S.gpu[i].xgmi = st;
        }
    }
    fclose (f);
}

static fake_gpu_t *gpu_of (void *p)
{
    int *t = p;

    load ();
    if (!t || t < tokens || t >= tokens + MAXGPU || !S.gpu[t - tokens].present) {
        return NULL;
    }
    return &S.gpu[t - tokens];
}

int amdsmi_init (uint64_t flags)
{
    load ();
    return (flags & 2) ? S.init_rc : 1;
}

int amdsmi_shut_down (void)
{
    return 0;
}

int amdsmi_get_socket_handles (uint32_t *n, void **sockets)
{
    uint32_t k = 0;

    load ();
    for (unsigned int i = 0; i < S.ngpu; i++) {
        if (!S.gpu[i].present) {
            continue;
        }
        if (sockets && k < *n) {
            sockets[k] = &tokens[i];
        }
        k++;
    }
    *n = k;
    return 0;
}

int amdsmi_get_processor_handles (void *socket, uint32_t *n, void **procs)
{
    if (!gpu_of (socket)) {
        return 1;
    }
    if (procs && *n >= 1) {
        procs[0] = socket;
    }
    *n = 1;
    return 0;
}

int amdsmi_get_gpu_device_bdf (void *proc, uint64_t *bdf)
{
    fake_gpu_t *g = gpu_of (proc);

    if (!g) {
        return 1;
    }
    *bdf = (uint64_t)g->func | ((uint64_t)g->dev << 3) | ((uint64_t)g->bus << 8)
           | ((uint64_t)g->domain << 16);
    return 0;
}

int amdsmi_get_gpu_total_ecc_count (void *proc, amdsmi_error_count_t *ec)
{
    fake_gpu_t *g = gpu_of (proc);

    if (!g) {
        return 1;
    }
    if (!g->has_ecc) {
        return 2;
    }
    ec->correctable_count = g->ecc[0];
    ec->uncorrectable_count = g->ecc[1];
    ec->deferred_count = g->ecc[2];
    return 0;
}

int amdsmi_gpu_xgmi_error_status (void *proc, int *status)
{
    fake_gpu_t *g = gpu_of (proc);

    if (!g) {
        return 1;
    }
    if (!g->has_xgmi) {
        return 2;
    }
    *status = g->xgmi;
    return 0;
}

int amdsmi_status_code_to_string (int rc, const char **s)
{
    *s = rc == 0   ? "AMDSMI_STATUS_SUCCESS"
         : rc == 2 ? "AMDSMI_STATUS_NOT_SUPPORTED"
                   : "AMDSMI_STATUS_INVAL";
    return 0;
}

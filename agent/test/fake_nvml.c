/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

/* A stand-in for libnvidia-ml.so.1, built only for tests and loaded through
 * the same dlopen path as the real library. It answers from the script named
 * by $FM_FAKE_NVML, read again on every call so that a test can rewrite it
 * between samples. Lines (devices are indexes from 0):
 *   init RC                          nvmlInit_v2 returns RC
 *   device I DOMAIN BUS DEV          a GPU (hex PCI address)
 *   ecc I SBE_VOL DBE_VOL SBE_AGG DBE_AGG
 *   retired I SBE DBE PENDING
 *   remap I CORR UNC PENDING FAILURE
 *   throttle I MASK
 *   nvlink I LINK ACTIVE REPLAY RECOVERY CRC_FLIT CRC_DATA
 *   xid SEQ I CODE                   delivered once, in SEQ order
 *   lost I                           every query on I: NVML_ERROR_GPU_IS_LOST
 * A query without a line answers NVML_ERROR_NOT_SUPPORTED. Built with
 * FAKE_NVML_MINIMAL it lacks the event and NVLink calls (missing symbols).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXDEV 8
#define MAXLINK 18
#define MAXXID 64

struct nvmlDevice_st {
    int idx;
};
struct nvmlEventSet_st {
    int unused;
};

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct {
    bool present, lost;
    unsigned int domain, bus, dev;
    bool has_ecc, has_retired, has_remap, has_throttle;
    unsigned long long ecc[4]; /* sbe vol, dbe vol, sbe agg, dbe agg */
    unsigned int retired[2], retired_pending;
    unsigned int remap[4];
    unsigned long long throttle;
    bool has_link[MAXLINK];
    unsigned int link_active[MAXLINK];
    unsigned long long link_err[MAXLINK][4];
} fake_dev_t;

static struct {
    int init_rc;
    fake_dev_t dev[MAXDEV];
    unsigned int ndev;
    struct {
        unsigned long seq;
        int dev;
        unsigned long long code;
    } xid[MAXXID];
    int nxid;
} S;

static struct nvmlDevice_st handles[MAXDEV];
#ifndef FAKE_NVML_MINIMAL
static struct nvmlEventSet_st the_set;
static unsigned long long registered[MAXDEV];
static unsigned long delivered; /* highest xid seq handed out */
#endif

/* Public for the symbol table only: these are NVML's names. */
int nvmlInit_v2 (void);
int nvmlShutdown (void);
const char *nvmlErrorString (int rc);
int nvmlDeviceGetCount_v2 (unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2 (unsigned int i, nvmlDevice_t *d);
int nvmlDeviceGetPciInfo_v3 (nvmlDevice_t d, nvmlPciInfo_t *pci);
int nvmlDeviceGetTotalEccErrors (nvmlDevice_t d,
                                 int type,
                                 int counter,
                                 unsigned long long *v);
int nvmlDeviceGetRetiredPages (nvmlDevice_t d,
                               int cause,
                               unsigned int *n,
                               unsigned long long *addr);
int nvmlDeviceGetRetiredPagesPendingStatus (nvmlDevice_t d, int *pending);
int nvmlDeviceGetRemappedRows (nvmlDevice_t d,
                               unsigned int *corr,
                               unsigned int *unc,
                               unsigned int *pending,
                               unsigned int *failure);
int nvmlDeviceGetCurrentClocksThrottleReasons (nvmlDevice_t d, unsigned long long *r);
#ifndef FAKE_NVML_MINIMAL
int nvmlEventSetCreate (nvmlEventSet_t *set);
int nvmlEventSetFree (nvmlEventSet_t set);
int nvmlDeviceRegisterEvents (nvmlDevice_t d,
                              unsigned long long types,
                              nvmlEventSet_t set);
int nvmlEventSetWait_v2 (nvmlEventSet_t set, nvmlEventData_t *data, unsigned int ms);
int nvmlDeviceGetNvLinkState (nvmlDevice_t d, unsigned int link, int *active);
int nvmlDeviceGetNvLinkErrorCounter (nvmlDevice_t d,
                                     unsigned int link,
                                     int counter,
                                     unsigned long long *v);
#endif

static void load (void)
{
    const char *path = getenv ("FM_FAKE_NVML");
    char line[256];
    FILE *f;

    memset (&S, 0, sizeof (S));
    if (!path || !(f = fopen (path, "r"))) {
        return;
    }
    while (fgets (line, sizeof (line), f)) {
        unsigned int i, l, a, b, c, d, e;
        unsigned long long x[4];
        unsigned long seq;

        if (sscanf (line, "init %d", &S.init_rc) == 1) {
            continue;
        }
        if (sscanf (line, "device %u %x %x %x", &i, &a, &b, &c) == 4 && i < MAXDEV) {
            S.dev[i].present = true;
            S.dev[i].domain = a;
            S.dev[i].bus = b;
            S.dev[i].dev = c;
            S.ndev = i + 1 > S.ndev ? i + 1 : S.ndev;
        } else if (sscanf (line,
                           "ecc %u %llu %llu %llu %llu",
                           &i,
                           &x[0],
                           &x[1],
                           &x[2],
                           &x[3])
                       == 5
                   && i < MAXDEV) {
            S.dev[i].has_ecc = true;
            memcpy (S.dev[i].ecc, x, sizeof (x));
        } else if (sscanf (line, "retired %u %u %u %u", &i, &a, &b, &c) == 4
                   && i < MAXDEV) {
            S.dev[i].has_retired = true;
            S.dev[i].retired[0] = a;
            S.dev[i].retired[1] = b;
            S.dev[i].retired_pending = c;
        } else if (sscanf (line, "remap %u %u %u %u %u", &i, &a, &b, &c, &d) == 5
                   && i < MAXDEV) {
            S.dev[i].has_remap = true;
            S.dev[i].remap[0] = a;
            S.dev[i].remap[1] = b;
            S.dev[i].remap[2] = c;
            S.dev[i].remap[3] = d;
        } else if (sscanf (line, "throttle %u %llx", &i, &x[0]) == 2 && i < MAXDEV) {
            S.dev[i].has_throttle = true;
            S.dev[i].throttle = x[0];
        } else if (sscanf (
                       line, "nvlink %u %u %u %u %u %u %u", &i, &l, &a, &b, &c, &d, &e)
                       == 7
                   && i < MAXDEV && l < MAXLINK) {
            S.dev[i].has_link[l] = true;
            S.dev[i].link_active[l] = a;
            S.dev[i].link_err[l][0] = b;
            S.dev[i].link_err[l][1] = c;
            S.dev[i].link_err[l][2] = d;
            S.dev[i].link_err[l][3] = e;
        } else if (sscanf (line, "xid %lu %u %llu", &seq, &i, &x[0]) == 3
                   && S.nxid < MAXXID) {
            S.xid[S.nxid].seq = seq;
            S.xid[S.nxid].dev = (int)i;
            S.xid[S.nxid].code = x[0];
            S.nxid++;
        } else if (sscanf (line, "lost %u", &i) == 1 && i < MAXDEV) {
            S.dev[i].lost = true;
        }
    }
    fclose (f);
}

/* The device behind a handle, or NULL; *rc is what to answer then. */
static fake_dev_t *dev_of (nvmlDevice_t d, int *rc)
{
    load ();
    if (!d || d < handles || d >= handles + MAXDEV || !S.dev[d->idx].present) {
        *rc = 2; /* NVML_ERROR_INVALID_ARGUMENT */
        return NULL;
    }
    if (S.dev[d->idx].lost) {
        *rc = 15; /* NVML_ERROR_GPU_IS_LOST */
        return NULL;
    }
    return &S.dev[d->idx];
}

int nvmlInit_v2 (void)
{
    load ();
    return S.init_rc;
}

int nvmlShutdown (void)
{
    return 0;
}

const char *nvmlErrorString (int rc)
{
    switch (rc) {
    case 0:
        return "Success";
    case 3:
        return "Not Supported";
    case 15:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

int nvmlDeviceGetCount_v2 (unsigned int *n)
{
    load ();
    *n = S.ndev;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2 (unsigned int i, nvmlDevice_t *d)
{
    load ();
    if (i >= S.ndev || !S.dev[i].present) {
        return 2;
    }
    handles[i].idx = (int)i;
    *d = &handles[i];
    return 0;
}

int nvmlDeviceGetPciInfo_v3 (nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);

    if (!x) {
        return rc;
    }
    memset (pci, 0, sizeof (*pci));
    pci->domain = x->domain;
    pci->bus = x->bus;
    pci->device = x->dev;
    snprintf (
        pci->busId, sizeof (pci->busId), "%08X:%02X:%02X.0", x->domain, x->bus, x->dev);
    return 0;
}

int nvmlDeviceGetTotalEccErrors (nvmlDevice_t d,
                                 int type,
                                 int counter,
                                 unsigned long long *v)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);

    if (!x) {
        return rc;
    }
    if (!x->has_ecc) {
        return 3;
    }
    *v = x->ecc[(counter ? 2 : 0) + (type ? 1 : 0)];
    return 0;
}

int nvmlDeviceGetRetiredPages (nvmlDevice_t d,
                               int cause,
                               unsigned int *n,
                               unsigned long long *addr)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);
    unsigned int have;

    if (!x) {
        return rc;
    }
    if (!x->has_retired) {
        return 3;
    }
    have = x->retired[cause ? 1 : 0];
    if (*n < have) {
        *n = have;
        return have ? 7 : 0; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    for (unsigned int i = 0; addr && i < have; i++) {
        addr[i] = 0x1000ULL * (i + 1);
    }
    *n = have;
    return 0;
}

int nvmlDeviceGetRetiredPagesPendingStatus (nvmlDevice_t d, int *pending)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);

    if (!x) {
        return rc;
    }
    if (!x->has_retired) {
        return 3;
    }
    *pending = (int)x->retired_pending;
    return 0;
}

int nvmlDeviceGetRemappedRows (nvmlDevice_t d,
                               unsigned int *corr,
                               unsigned int *unc,
                               unsigned int *pending,
                               unsigned int *failure)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);

    if (!x) {
        return rc;
    }
    if (!x->has_remap) {
        return 3;
    }
    *corr = x->remap[0];
    *unc = x->remap[1];
    *pending = x->remap[2];
    *failure = x->remap[3];
    return 0;
}

int nvmlDeviceGetCurrentClocksThrottleReasons (nvmlDevice_t d, unsigned long long *r)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);

    if (!x) {
        return rc;
    }
    if (!x->has_throttle) {
        return 3;
    }
    *r = x->throttle;
    return 0;
}

#ifndef FAKE_NVML_MINIMAL
int nvmlEventSetCreate (nvmlEventSet_t *set)
{
    memset (registered, 0, sizeof (registered));
    delivered = 0;
    *set = &the_set;
    return 0;
}

int nvmlEventSetFree (nvmlEventSet_t set)
{
    return set == &the_set ? 0 : 2;
}

int nvmlDeviceRegisterEvents (nvmlDevice_t d,
                              unsigned long long types,
                              nvmlEventSet_t set)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);

    if (!x) {
        return rc;
    }
    if (set != &the_set) {
        return 2;
    }
    registered[d->idx] |= types;
    return 0;
}

int nvmlEventSetWait_v2 (nvmlEventSet_t set, nvmlEventData_t *data, unsigned int ms)
{
    int best = -1;

    load ();
    if (set != &the_set) {
        return 2;
    }
    for (int i = 0; i < S.nxid; i++) {
        if (S.xid[i].seq > delivered && S.xid[i].dev >= 0 && S.xid[i].dev < MAXDEV
            && (registered[S.xid[i].dev] & 0x8ULL)
            && (best < 0 || S.xid[i].seq < S.xid[best].seq)) {
            best = i;
        }
    }
    if (best < 0) {
        return 10; /* NVML_ERROR_TIMEOUT */
    }
    delivered = S.xid[best].seq;
    memset (data, 0, sizeof (*data));
    data->device = &handles[S.xid[best].dev];
    data->eventType = 0x8ULL;
    data->eventData = S.xid[best].code;
    return 0;
}

int nvmlDeviceGetNvLinkState (nvmlDevice_t d, unsigned int link, int *active)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);

    if (!x) {
        return rc;
    }
    if (link >= MAXLINK || !x->has_link[link]) {
        return 3;
    }
    *active = (int)x->link_active[link];
    return 0;
}

int nvmlDeviceGetNvLinkErrorCounter (nvmlDevice_t d,
                                     unsigned int link,
                                     int counter,
                                     unsigned long long *v)
{
    int rc;
    fake_dev_t *x = dev_of (d, &rc);

    if (!x) {
        return rc;
    }
    if (link >= MAXLINK || !x->has_link[link] || counter < 0 || counter > 3) {
        return 3;
    }
    *v = x->link_err[link][counter];
    return 0;
}
#endif

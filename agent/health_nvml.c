/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "log.h"

/* NVIDIA GPUs through NVML, loaded at run time so that the agent neither
 * builds nor links against the driver. The few types below are NVML's ABI
 * (nvml.h of CUDA 11 and later) for the calls made here.
 */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_GPU_IS_LOST = 15,
};

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

#define NVML_EVENT_XID 0x8ULL /* nvmlEventTypeXidCriticalError */
#define NVML_NVLINK_MAX_LINKS 18
#define GPUS_MAX 64
#define EVENTS_MAX 1024 /* per sample: the rest waits for the next one */

/* Throttle reasons that mean the hardware is protecting itself. */
#define THROTTLE_BAD                                                                   \
    (0x8ULL /* HwSlowdown */ | 0x20ULL /* SwThermal */ | 0x40ULL /* HwThermal */       \
     | 0x80ULL /* HwPowerBrake */)

typedef struct {
    nvmlReturn_t (*init) (void);
    nvmlReturn_t (*shutdown) (void);
    const char *(*error_string) (nvmlReturn_t);
    nvmlReturn_t (*count) (unsigned int *);
    nvmlReturn_t (*handle) (unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*pci) (nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*set_create) (nvmlEventSet_t *);
    nvmlReturn_t (*set_free) (nvmlEventSet_t);
    nvmlReturn_t (*register_events) (nvmlDevice_t, unsigned long long, nvmlEventSet_t);
    nvmlReturn_t (*set_wait) (nvmlEventSet_t, nvmlEventData_t *, unsigned int);
    nvmlReturn_t (*set_wait_old) (nvmlEventSet_t, nvmlEventData_t *, unsigned int);
    nvmlReturn_t (*ecc) (nvmlDevice_t, int, int, unsigned long long *);
    nvmlReturn_t (*retired) (nvmlDevice_t, int, unsigned int *, unsigned long long *);
    nvmlReturn_t (*retired_pending) (nvmlDevice_t, int *);
    nvmlReturn_t (*remapped) (
        nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *);
    nvmlReturn_t (*throttle) (nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*throttle_old) (nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*nvlink_state) (nvmlDevice_t, unsigned int, int *);
    nvmlReturn_t (*nvlink_error) (nvmlDevice_t,
                                  unsigned int,
                                  int,
                                  unsigned long long *);
} nvml_api_t;

typedef struct {
    nvmlDevice_t dev;
    char bus[FM_HEALTH_NAME_MAX]; /* "0000:17:00.0", as hwloc names it */
    bool lost;
} gpu_t;

typedef struct {
    void *dl;
    nvml_api_t api;
    bool initialised;
    nvmlEventSet_t events;
    gpu_t gpu[GPUS_MAX];
    unsigned int ngpu;
    fm_health_memo_t *memo;
} nvml_t;

static const char *errstr (nvml_t *s, nvmlReturn_t rc)
{
    const char *e = s->api.error_string ? s->api.error_string (rc) : NULL;

    return e ? e : "NVML error";
}

static void nvml_fini (void *arg)
{
    nvml_t *s = arg;
    int saved = errno;

    if (!s) {
        return;
    }
    if (s->events && s->api.set_free) {
        s->api.set_free (s->events);
    }
    if (s->initialised) {
        s->api.shutdown ();
    }
    if (s->dl) {
        dlclose (s->dl);
    }
    fm_health_memo_destroy (s->memo);
    free (s);
    errno = saved;
}

static void *nvml_init (const fm_health_conf_t *conf, fm_error_t *err)
{
    const char *lib =
        conf && conf->nvml_library ? conf->nvml_library : "libnvidia-ml.so.1";
    nvml_t *s = calloc (1, sizeof (*s));
    nvml_api_t *a;
    nvmlReturn_t rc;
    unsigned int n = 0;

    if (!s || !(s->memo = fm_health_memo_create ())) {
        free (s);
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    a = &s->api;
    const fm_health_sym_t syms[] = {
        {"nvmlInit_v2", (void **)&a->init, true},
        {"nvmlShutdown", (void **)&a->shutdown, true},
        {"nvmlErrorString", (void **)&a->error_string, true},
        {"nvmlDeviceGetCount_v2", (void **)&a->count, true},
        {"nvmlDeviceGetHandleByIndex_v2", (void **)&a->handle, true},
        {"nvmlDeviceGetPciInfo_v3", (void **)&a->pci, true},
        {"nvmlEventSetCreate", (void **)&a->set_create, false},
        {"nvmlEventSetFree", (void **)&a->set_free, false},
        {"nvmlDeviceRegisterEvents", (void **)&a->register_events, false},
        {"nvmlEventSetWait_v2", (void **)&a->set_wait, false},
        {"nvmlEventSetWait", (void **)&a->set_wait_old, false},
        {"nvmlDeviceGetTotalEccErrors", (void **)&a->ecc, false},
        {"nvmlDeviceGetRetiredPages", (void **)&a->retired, false},
        {"nvmlDeviceGetRetiredPagesPendingStatus", (void **)&a->retired_pending, false},
        {"nvmlDeviceGetRemappedRows", (void **)&a->remapped, false},
        {"nvmlDeviceGetCurrentClocksEventReasons", (void **)&a->throttle, false},
        {"nvmlDeviceGetCurrentClocksThrottleReasons", (void **)&a->throttle_old, false},
        {"nvmlDeviceGetNvLinkState", (void **)&a->nvlink_state, false},
        {"nvmlDeviceGetNvLinkErrorCounter", (void **)&a->nvlink_error, false},
        {NULL, NULL, false},
    };

    if (!(s->dl = fm_health_dlopen (lib, syms, err))) {
        int saved = errno;

        nvml_fini (s);
        errno = saved;
        return NULL;
    }
    /* Drivers before R450 lack the _v2 wait (whose event data is a superset
     * of the old one); CUDA 12 renamed the throttle call. Either will do.
     */
    if (!a->set_wait) {
        a->set_wait = a->set_wait_old;
    }
    if (!a->throttle) {
        a->throttle = a->throttle_old;
    }
    if ((rc = a->init ()) != NVML_SUCCESS) {
        fm_errprintf (err, "nvmlInit: %s", errstr (s, rc));
        nvml_fini (s);
        errno = ENODEV;
        return NULL;
    }
    s->initialised = true;
    if ((rc = a->count (&n)) != NVML_SUCCESS || n == 0) {
        fm_errprintf (err, "%s", rc ? errstr (s, rc) : "no NVIDIA GPU");
        nvml_fini (s);
        errno = ENODEV;
        return NULL;
    }
    if (!a->set_create || !a->set_free || !a->register_events || !a->set_wait) {
        fm_info ("health nvml: %s lacks the event calls: no XID events", lib);
    }
    if (!a->nvlink_state || !a->nvlink_error) {
        fm_info ("health nvml: %s lacks the NVLink calls: no NVLink counters", lib);
    }
    if (n > GPUS_MAX) {
        fm_warn ("health nvml: %u GPUs, sampling the first %d", n, GPUS_MAX);
        n = GPUS_MAX;
    }
    if (a->set_create && a->set_free && a->register_events && a->set_wait
        && (rc = a->set_create (&s->events)) != NVML_SUCCESS) {
        fm_warn ("health nvml: no XID events: nvmlEventSetCreate: %s", errstr (s, rc));
        s->events = NULL;
    }
    for (unsigned int i = 0; i < n; i++) {
        gpu_t *g = &s->gpu[s->ngpu];
        nvmlPciInfo_t pci;

        if ((rc = a->handle (i, &g->dev)) != NVML_SUCCESS) {
            fm_warn ("health nvml: GPU %u: %s", i, errstr (s, rc));
            continue;
        }
        memset (&pci, 0, sizeof (pci));
        if (a->pci (g->dev, &pci) == NVML_SUCCESS) {
            snprintf (g->bus,
                      sizeof (g->bus),
                      "%04x:%02x:%02x.0",
                      pci.domain & 0xffff,
                      pci.bus & 0xff,
                      pci.device & 0x1f);
        } else {
            snprintf (g->bus, sizeof (g->bus), "nvidia%u", i);
        }
        if (s->events
            && (rc = a->register_events (g->dev, NVML_EVENT_XID, s->events))
                   != NVML_SUCCESS) {
            fm_warn ("health nvml: %s: no XID events: %s", g->bus, errstr (s, rc));
        }
        s->ngpu++;
    }
    return s;
}

/* Log a failed query once per GPU and metric: NOT_SUPPORTED is normal (ECC
 * off, no NVLink, an older or newer GPU generation), the rest is not.
 */
static void query_failed (nvml_t *s, gpu_t *g, const char *what, nvmlReturn_t rc)
{
    char key[128];

    if (rc == NVML_ERROR_GPU_IS_LOST) {
        g->lost = true;
    }
    snprintf (key, sizeof (key), "%s/%s", g->bus, what);
    if (!fm_health_memo_note (s->memo, key)) {
        return;
    }
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
        fm_debug ("health nvml: %s: %s not supported", g->bus, what);
    } else {
        fm_warn ("health nvml: %s: %s: %s", g->bus, what, errstr (s, rc));
    }
}

static int counter (nvml_t *s,
                    gpu_t *g,
                    const char *name,
                    unsigned long long raw,
                    fm_hclass_t bad,
                    fm_health_set_t *out)
{
    char key[128];
    int64_t v = raw > INT64_MAX ? INT64_MAX : (int64_t)raw;
    int64_t delta;

    snprintf (key, sizeof (key), "%s/%s", g->bus, name);
    if (fm_health_memo_delta (s->memo, key, v, &delta) < 0) {
        return -1;
    }
    return fm_health_add_counter (
        out, FM_HREC_GPU, g->bus, 0, name, delta, v, delta > 0 ? bad : FM_HCLASS_INFO);
}

static int
gauge (gpu_t *g, const char *name, int64_t v, fm_hclass_t cls, fm_health_set_t *out)
{
    return fm_health_add_gauge (out, FM_HREC_GPU, g->bus, 0, name, v, cls);
}

static int sample_ecc (nvml_t *s, gpu_t *g, fm_health_set_t *out)
{
    static const struct {
        const char *name;
        int type;    /* nvmlMemoryErrorType_t: 0 corrected, 1 uncorrected */
        int counter; /* nvmlEccCounterType_t: 0 volatile, 1 aggregate */
        fm_hclass_t bad;
    } ecc[] = {
        {"ecc_sbe_volatile", 0, 0, FM_HCLASS_WARN},
        {"ecc_dbe_volatile", 1, 0, FM_HCLASS_RESET},
        {"ecc_sbe_aggregate", 0, 1, FM_HCLASS_WARN},
        {"ecc_dbe_aggregate", 1, 1, FM_HCLASS_RESET},
    };

    if (!s->api.ecc) {
        return 0;
    }
    for (size_t i = 0; i < sizeof (ecc) / sizeof (ecc[0]); i++) {
        unsigned long long v = 0;
        nvmlReturn_t rc = s->api.ecc (g->dev, ecc[i].type, ecc[i].counter, &v);

        if (rc != NVML_SUCCESS) {
            query_failed (s, g, "ECC counts", rc);
            return 0;
        }
        if (counter (s, g, ecc[i].name, v, ecc[i].bad, out) < 0) {
            return -1;
        }
    }
    return 0;
}

static int sample_pages (nvml_t *s, gpu_t *g, fm_health_set_t *out)
{
    static const char *const names[] = {"retired_pages_sbe", "retired_pages_dbe"};
    nvmlReturn_t rc;

    for (int cause = 0; s->api.retired && cause < 2; cause++) {
        unsigned int n = 0;

        rc = s->api.retired (g->dev, cause, &n, NULL);
        if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) {
            query_failed (s, g, "retired pages", rc);
            break;
        }
        if (counter (s, g, names[cause], n, FM_HCLASS_WARN, out) < 0) {
            return -1;
        }
    }
    if (s->api.retired_pending) {
        int pending = 0;

        if ((rc = s->api.retired_pending (g->dev, &pending)) != NVML_SUCCESS) {
            query_failed (s, g, "retired pages pending", rc);
        } else if (gauge (g,
                          "retired_pages_pending",
                          pending != 0,
                          pending ? FM_HCLASS_WARN : FM_HCLASS_INFO,
                          out)
                   < 0) {
            return -1;
        }
    }
    if (s->api.remapped) {
        unsigned int corr = 0, unc = 0, pending = 0, failure = 0;

        if ((rc = s->api.remapped (g->dev, &corr, &unc, &pending, &failure))
            != NVML_SUCCESS) {
            query_failed (s, g, "remapped rows", rc);
        } else if (counter (
                       s, g, "remapped_rows_correctable", corr, FM_HCLASS_WARN, out)
                       < 0
                   || counter (
                          s, g, "remapped_rows_uncorrectable", unc, FM_HCLASS_WARN, out)
                          < 0
                   || gauge (g,
                             "remap_pending",
                             pending != 0,
                             pending ? FM_HCLASS_WARN : FM_HCLASS_INFO,
                             out)
                          < 0
                   || gauge (g,
                             "remap_failure",
                             failure != 0,
                             failure ? FM_HCLASS_FAULT : FM_HCLASS_INFO,
                             out)
                          < 0) {
            return -1;
        }
    }
    return 0;
}

static int sample_links (nvml_t *s, gpu_t *g, fm_health_set_t *out)
{
    /* nvmlNvLinkErrorCounter_t: 0 replay, 1 recovery, 2 CRC flit, 3 CRC data */
    static const char *const names[] = {
        "nvlink_replay", "nvlink_recovery", "nvlink_crc_flit", "nvlink_crc_data"};
    int64_t delta[4] = {0}, total[4] = {0};
    int active = 0;
    bool any = false;

    if (!s->api.nvlink_state || !s->api.nvlink_error) {
        return 0;
    }
    for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        int on = 0;
        nvmlReturn_t rc = s->api.nvlink_state (g->dev, l, &on);

        if (rc != NVML_SUCCESS) {
            /* links are numbered from 0; the first unsupported one ends them */
            if (l == 0) {
                query_failed (s, g, "NVLink", rc);
            }
            break;
        }
        any = true;
        if (!on) {
            continue;
        }
        active++;
        for (int c = 0; c < 4; c++) {
            unsigned long long v = 0;
            char key[128];
            int64_t d;

            if ((rc = s->api.nvlink_error (g->dev, l, c, &v)) != NVML_SUCCESS) {
                query_failed (s, g, "NVLink error counters", rc);
                continue;
            }
            snprintf (key, sizeof (key), "%s/nvlink%u/%d", g->bus, l, c);
            v = v > INT64_MAX ? INT64_MAX : v;
            if (fm_health_memo_delta (s->memo, key, (int64_t)v, &d) < 0) {
                return -1;
            }
            delta[c] += d;
            total[c] += (int64_t)v;
        }
    }
    if (!any) {
        return 0;
    }
    if (gauge (g, "nvlink_active", active, FM_HCLASS_INFO, out) < 0) {
        return -1;
    }
    for (int c = 0; c < 4; c++) {
        if (fm_health_add_counter (out,
                                   FM_HREC_GPU,
                                   g->bus,
                                   0,
                                   names[c],
                                   delta[c],
                                   total[c],
                                   delta[c] > 0 ? FM_HCLASS_WARN : FM_HCLASS_INFO)
            < 0) {
            return -1;
        }
    }
    return 0;
}

typedef struct {
    int gpu; /* index in s->gpu, -1 unknown */
    unsigned long long xid;
    int64_t count;
} xid_count_t;

static int sample_events (nvml_t *s, fm_health_set_t *out)
{
    xid_count_t seen[64];
    size_t nseen = 0;
    nvmlEventData_t ev;

    if (!s->events) {
        return 0;
    }
    for (int i = 0; i < EVENTS_MAX; i++) {
        nvmlReturn_t rc;
        int gpu = -1;
        size_t k;

        memset (&ev, 0, sizeof (ev));
        rc = s->api.set_wait (s->events, &ev, 0);
        if (rc == NVML_ERROR_TIMEOUT) {
            break;
        }
        if (rc != NVML_SUCCESS) {
            if (fm_health_memo_note (s->memo, "events")) {
                fm_warn ("health nvml: nvmlEventSetWait: %s", errstr (s, rc));
            }
            break;
        }
        fm_health_memo_unnote (s->memo, "events");
        if (!(ev.eventType & NVML_EVENT_XID)) {
            continue;
        }
        for (unsigned int j = 0; j < s->ngpu; j++) {
            if (s->gpu[j].dev == ev.device) {
                gpu = (int)j;
            }
        }
        for (k = 0; k < nseen; k++) {
            if (seen[k].gpu == gpu && seen[k].xid == ev.eventData) {
                break;
            }
        }
        if (k == nseen) {
            if (nseen == sizeof (seen) / sizeof (seen[0])) {
                continue;
            }
            seen[nseen++] = (xid_count_t){.gpu = gpu, .xid = ev.eventData};
        }
        seen[k].count++;
    }
    for (size_t k = 0; k < nseen; k++) {
        unsigned int xid = seen[k].xid > 0xffffffffULL ? 0 : (unsigned int)seen[k].xid;
        const char *dev = seen[k].gpu >= 0 ? s->gpu[seen[k].gpu].bus : "unknown";

        fm_notice ("health nvml: %s: XID %u (%s, %s) x%" PRId64,
                   dev,
                   xid,
                   fm_health_class_name (fm_health_xid_class (xid)),
                   fm_health_xid_action (xid),
                   seen[k].count);
        if (fm_health_add_counter (out,
                                   FM_HREC_XID,
                                   dev,
                                   0,
                                   "xid",
                                   seen[k].count,
                                   xid,
                                   fm_health_xid_class (xid))
            < 0) {
            return -1;
        }
        snprintf (out->rec[out->n - 1].text,
                  FM_HEALTH_NAME_MAX,
                  "%s",
                  fm_health_xid_action (xid));
    }
    return 0;
}

static int nvml_sample (void *arg, fm_health_set_t *out, fm_error_t *err)
{
    nvml_t *s = arg;
    size_t n0 = out->n;
    int rc = sample_events (s, out);

    for (unsigned int i = 0; rc == 0 && i < s->ngpu; i++) {
        gpu_t *g = &s->gpu[i];
        unsigned long long reasons = 0;
        nvmlReturn_t r;

        rc = fm_health_add_text (
            out, FM_HREC_GPU, g->bus, 0, "vendor", "nvidia", FM_HCLASS_INFO);
        if (rc == 0) {
            rc = sample_ecc (s, g, out);
        }
        if (rc == 0) {
            rc = sample_pages (s, g, out);
        }
        if (rc == 0 && s->api.throttle) {
            if ((r = s->api.throttle (g->dev, &reasons)) != NVML_SUCCESS) {
                query_failed (s, g, "throttle reasons", r);
            } else {
                rc = gauge (g,
                            "throttle_reasons",
                            (int64_t)(reasons & 0xffffffffULL),
                            reasons & THROTTLE_BAD ? FM_HCLASS_WARN : FM_HCLASS_INFO,
                            out);
            }
        }
        if (rc == 0) {
            rc = sample_links (s, g, out);
        }
        if (rc == 0 && g->lost) {
            rc = gauge (g, "gpu_lost", 1, FM_HCLASS_REBOOT, out);
        }
    }
    if (rc < 0) {
        out->n = n0;
        return fm_errprintf (err, "out of memory");
    }
    return 0;
}

const fm_health_collector_t fm_health_nvml = {
    .name = "nvml",
    .init = nvml_init,
    .sample = nvml_sample,
    .fini = nvml_fini,
};

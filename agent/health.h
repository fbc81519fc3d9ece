/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_HEALTH_H
#define FM_AGENT_HEALTH_H

/* Node-health collectors (doc/health.md). Each collector reads one source
 * (sysfs network devices, InfiniBand/RoCE ports, NVML, AMD SMI, hwloc) through
 * a configurable root or library path, and appends typed records to a set once
 * per report window. Counters are reported as deltas since the previous sample;
 * the first sample of a counter is its baseline (delta 0).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum {
    FM_HREC_NIC = 1, /* network device (sysfs, ethtool) */
    FM_HREC_IB_PORT, /* InfiniBand or RoCE port */
    FM_HREC_GPU,     /* GPU counters and gauges (NVML, AMD SMI) */
    FM_HREC_XID,     /* NVIDIA XID event */
    FM_HREC_TOPO,    /* GPU to NIC locality (hwloc) */
} fm_hrec_kind_t;

/* A hint for the daemon, ordered by severity. */
typedef enum {
    FM_HCLASS_INFO = 0, /* nothing wrong */
    FM_HCLASS_APP,      /* caused by the application: never blame the node */
    FM_HCLASS_WARN,     /* errors or degradation worth watching */
    FM_HCLASS_RESET,    /* the GPU needs a reset */
    FM_HCLASS_REBOOT,   /* the node needs a reboot */
    FM_HCLASS_FAULT,    /* a hardware fault that needs service */
} fm_hclass_t;

typedef enum {
    FM_HVAL_COUNTER = 1, /* delta over the window, value = current raw counter */
    FM_HVAL_GAUGE,       /* value only */
    FM_HVAL_TEXT,        /* text only */
} fm_hval_t;

#define FM_HEALTH_NAME_MAX 64
/* Entries of a rendered counters/gauges/attrs object at most (fabricd's cap). */
#define FM_HEALTH_OBJ_MAX 32

typedef struct {
    fm_hrec_kind_t kind;
    fm_hval_t vtype;
    fm_hclass_t cls;
    char device[FM_HEALTH_NAME_MAX]; /* netdev, HCA, GPU PCI bus id */
    int port;                        /* IB port number; 0 when not a port */
    char name[FM_HEALTH_NAME_MAX];   /* counter or attribute name */
    int64_t delta;
    int64_t value;
    char text[FM_HEALTH_NAME_MAX];
} fm_health_record_t;

/* A growable array of records. Zero-initialise or fm_health_set_init(). */
typedef struct {
    fm_health_record_t *rec;
    size_t n;
    size_t cap;
} fm_health_set_t;

void fm_health_set_init (fm_health_set_t *set);
void fm_health_set_clear (fm_health_set_t *set); /* keeps the memory */
void fm_health_set_free (fm_health_set_t *set);  /* NULL-safe */
/* Append a copy of rec. 0, or -1/ENOMEM (set unchanged). */
int fm_health_set_add (fm_health_set_t *set, const fm_health_record_t *rec);
/* Convenience constructors: device, name and text are truncated to fit. */
int fm_health_add_counter (fm_health_set_t *set,
                           fm_hrec_kind_t kind,
                           const char *device,
                           int port,
                           const char *name,
                           int64_t delta,
                           int64_t value,
                           fm_hclass_t cls);
int fm_health_add_gauge (fm_health_set_t *set,
                         fm_hrec_kind_t kind,
                         const char *device,
                         int port,
                         const char *name,
                         int64_t value,
                         fm_hclass_t cls);
int fm_health_add_text (fm_health_set_t *set,
                        fm_hrec_kind_t kind,
                        const char *device,
                        int port,
                        const char *name,
                        const char *text,
                        fm_hclass_t cls);

/* Configuration shared by every collector; each uses the fields it needs.
 * NULL fields take the defaults shown.
 */
typedef struct {
    const char *root;           /* sysfs root: "/" (so "/sys/class/net") */
    const char *nvml_library;   /* "libnvidia-ml.so.1" */
    const char *amdsmi_library; /* "libamd_smi.so" */
    const char *topology_xml;   /* hwloc XML file; NULL: this machine */
    const char *const *netdevs; /* allow list (NULL-terminated); NULL: every
                                 * netdev with a device link (no lo, veth...) */
    const char *const *hcas;    /* allow list of RDMA devices; NULL: all */
    bool no_ethtool;            /* net: skip SIOCETHTOOL statistics */
} fm_health_conf_t;

/* A collector. init returns its state (NULL/errno + err: the collector cannot
 * run here, e.g. no library or no sysfs directory). sample appends this
 * window's records to out; -1/errno + err when nothing could be sampled at all,
 * with out unchanged. Problems with single files or devices are logged once
 * (and once again when they clear) and do not fail the sample. fini is NULL-safe.
 */
typedef struct {
    const char *name;
    void *(*init) (const fm_health_conf_t *conf, fm_error_t *err);
    int (*sample) (void *state, fm_health_set_t *out, fm_error_t *err);
    void (*fini) (void *state);
} fm_health_collector_t;

extern const fm_health_collector_t fm_health_net;
extern const fm_health_collector_t fm_health_ib;
extern const fm_health_collector_t fm_health_nvml;
extern const fm_health_collector_t fm_health_amdsmi;
extern const fm_health_collector_t fm_health_topo;

/* All of the above, NULL-terminated, in the order the agent runs them. */
extern const fm_health_collector_t *const fm_health_collectors[];

/* The running collectors of one agent. create initialises every collector in
 * fm_health_collectors; one that cannot run here is logged once (info) and left
 * out, so create fails only on ENOMEM. sample runs them all and appends to out;
 * it returns -1 when one of them failed (logged once per failure streak), with
 * the records of the others in out. active fills names (up to max) with the
 * collectors that run and returns how many run. NULL-safe destroy.
 */
typedef struct fm_health fm_health_t;
fm_health_t *fm_health_create (const fm_health_conf_t *conf, fm_error_t *err);
int fm_health_sample (fm_health_t *h, fm_health_set_t *out);
size_t fm_health_active (const fm_health_t *h, const char **names, size_t max);
void fm_health_destroy (fm_health_t *h);

typedef enum {
    /* Also emit the record types that doc/health.md defines beyond the
     * original api.md set (gpu, xid, gpu_nic, counters). fabricd accepts them;
     * an older fabricd refuses them with 400 for the whole batch.
     */
    FM_HEALTH_RENDER_EXTENDED = 1,
} fm_health_json_render_b;

/* The window's "health" array (doc/api.md): records grouped into one object per
 * NIC and IB port, at most FM_API_MAX_HEALTH objects, the most severe first when
 * there are more (*dropped, may be NULL, counts the rest). NULL/ENOMEM.
 */
json_t *fm_health_json_render (const fm_health_set_t *set, int flags, size_t *dropped);

const char *fm_health_class_name (fm_hclass_t cls);

/* XID policy (health_xid.c): the class of an NVIDIA XID and the resolution
 * bucket of NVIDIA's Xid catalog it comes from ("RESTART_APP", "RESET_GPU",
 * ...). An XID missing from the table is FM_HCLASS_WARN / "UNKNOWN".
 */
fm_hclass_t fm_health_xid_class (unsigned int xid);
const char *fm_health_xid_action (unsigned int xid);

/* Helpers for collectors. */

/* Remembered counter values and logged notes, keyed by string. */
typedef struct fm_health_memo fm_health_memo_t;
fm_health_memo_t *fm_health_memo_create (void);
void fm_health_memo_destroy (fm_health_memo_t *m);
/* Store value under key; *delta is value minus the previous one (a counter that
 * went backwards was reset: its delta is the new value), 0 the first time.
 * Returns 1 when key was known, 0 when new, -1/ENOMEM.
 */
int fm_health_memo_delta (fm_health_memo_t *m,
                          const char *key,
                          int64_t value,
                          int64_t *delta);
/* True the first time key is noted since it was last cleared. */
bool fm_health_memo_note (fm_health_memo_t *m, const char *key);
/* True when key was noted (and now is not). */
bool fm_health_memo_unnote (fm_health_memo_t *m, const char *key);

/* Read a sysfs file (at most len-1 bytes, trailing newline removed).
 * 0, or -1/errno (EFBIG when it does not fit).
 */
int fm_health_read_file (const char *path, char *buf, size_t len);
/* Parse a non-negative decimal (or 0x hex) counter with nothing after it
 * but whitespace. 0, or -1/EINVAL or ERANGE (above INT64_MAX).
 */
int fm_health_parse_u64 (const char *s, int64_t *out);

/* fm_health_read_file + fm_health_parse_u64 with the logging rule of the
 * collectors: the first failure for path is logged (warning) and noted in m,
 * the first success after it is logged (info). 0 or -1.
 */
int fm_health_read_counter (fm_health_memo_t *m,
                            const char *what,
                            const char *path,
                            int64_t *out);

/* Device names from a directory or an allow list: non-empty, at most maxlen
 * characters, no '/', not "." or "..".
 */
#define FM_HEALTH_DEVS_MAX 256
bool fm_health_name_ok (const char *name, size_t maxlen);
/* A validated copy of a NULL-terminated allow list of at most
 * FM_HEALTH_DEVS_MAX names. NULL/EINVAL (+ err) or ENOMEM.
 */
char **fm_health_names_copy (const char *const *list, size_t maxlen, fm_error_t *err);
void fm_health_names_free (char **v);

/* A symbol that a dlopen'd library must (or may) provide. */
typedef struct {
    const char *name;
    void **fn; /* where the address goes; NULL when an optional one is missing */
    bool required;
} fm_health_sym_t;

/* dlopen(lib, RTLD_NOW | RTLD_LOCAL) and resolve syms (terminated by a NULL
 * name). Missing optional symbols are logged (debug) here. The handle, or
 * NULL/ENOENT (no library) or ENOSYS (a required symbol is missing) + err.
 */
void *fm_health_dlopen (const char *lib, const fm_health_sym_t *syms, fm_error_t *err);

/* NCCL/RCCL steering (health_steer.c, doc/health.md "Steering"): which
 * InfiniBand/RoCE ports of this node the job's new steps should leave out of
 * NCCL_IB_HCA. A port is degraded, for the rest of the job, once a window shows
 * it not ACTIVE/LinkUp, link_downed or link_error_recovery moving, or at least
 * FM_HEALTH_STEER_ERRORS symbol/receive errors. Every port degraded: nothing is
 * excluded (NCCL would fall back to TCP sockets, worse than a degraded rail).
 */
#define FM_HEALTH_STEER_ERRORS 10
#define FM_HEALTH_STEER_PORTS 32
/* "mlx5_1:1,mlx5_3:1" and room for the terminator */
#define FM_HEALTH_STEER_MAX (FM_HEALTH_STEER_PORTS * (FM_HEALTH_NAME_MAX + 5))

typedef struct fm_health_steer fm_health_steer_t;

/* The file the plugin reads at task start: path, removed here (a restarted
 * agent decides afresh) and written atomically (mode 0644) whenever the
 * exclusion changes. NULL/ENOMEM.
 */
fm_health_steer_t *fm_health_steer_create (const char *path);
void fm_health_steer_destroy (fm_health_steer_t *st); /* NULL-safe */
/* Take this window's records. 1 when the exclusion changed (and the file was
 * rewritten), 0 when not, -1/errno when the file could not be written (the
 * next update tries again).
 */
int fm_health_steer_update (fm_health_steer_t *st, const fm_health_set_t *set);
/* The current exclusion, "" when none. */
const char *fm_health_steer_exclude (const fm_health_steer_t *st);

#endif /* FM_AGENT_HEALTH_H */

/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_TOPO_H
#define FM_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The fabric as Slurm's tree topology describes it (topology.conf, or the output
 * of `scontrol show topology`, which uses the same key=value lines):
 *
 *   SwitchName=leaf1 Nodes=fmn[1-4]
 *   SwitchName=spine1 Switches=leaf[1-2]
 *
 * A switch with Nodes= and no Switches= is a leaf; a switch with Switches= is an
 * upper switch (scontrol also prints the descendant Nodes= of upper switches: they
 * are checked to exist and otherwise ignored). Localization models two tiers: an
 * uplink is a (leaf, parent) pair; switches above the parents of leaves are kept
 * but explain nothing. A flat topology (no file) has nodes and no switches.
 * Ids are dense indices from 0, in order of first appearance.
 */
typedef struct fm_topo fm_topo_t;

#define FM_TOPO_NAME_MAX 63
#define FM_TOPO_MAX_NODES (1 << 20)
#define FM_TOPO_MAX_SWITCHES 65536
#define FM_TOPO_TEXT_MAX (16 * 1024 * 1024)
#define FM_TOPO_LINE_MAX 65536

/* An empty flat topology; add nodes with fm_topo_add_node(). NULL/ENOMEM. */
fm_topo_t *fm_topo_create_flat (void);

/* Parse topology text. Keys are case-insensitive; `#` starts a comment; a line
 * ending in `\` continues. Errors (-> NULL/EINVAL, "line N: ..." in err): unknown
 * key, missing SwitchName, duplicate switch, a switch with neither Nodes nor
 * Switches, a reference to an undefined switch, a switch tree cycle, a node in
 * two leaves, a bad hostlist or name, Level that contradicts the tree, text or
 * line too long (EFBIG).
 */
fm_topo_t *fm_topo_parse (const char *text, fm_error_t *err);

void fm_topo_destroy (fm_topo_t *t);

/* Add a node without a leaf (flat topologies, or nodes the file does not list);
 * returns its id, the existing id if already known, or -1/EINVAL (bad name),
 * ENOSPC (too many nodes), ENOMEM.
 */
int fm_topo_add_node (fm_topo_t *t, const char *name);

size_t fm_topo_nnodes (const fm_topo_t *t);
size_t fm_topo_nleaves (const fm_topo_t *t);
size_t fm_topo_nspines (const fm_topo_t *t);
size_t fm_topo_nuplinks (const fm_topo_t *t);

/* Names and lookups; ids out of range give NULL / -1. */
const char *fm_topo_node_name (const fm_topo_t *t, int node);
int fm_topo_node_find (const fm_topo_t *t, const char *name);
/* Leaf index of a node, -1 when it has none. */
int fm_topo_node_leaf (const fm_topo_t *t, int node);

/* Leaves and spines (the parents of leaves) have their own dense indices. */
const char *fm_topo_leaf_name (const fm_topo_t *t, int leaf);
int fm_topo_leaf_find (const fm_topo_t *t, const char *name);
const int *fm_topo_leaf_nodes (const fm_topo_t *t, int leaf, size_t *n);
const char *fm_topo_spine_name (const fm_topo_t *t, int spine);
int fm_topo_spine_find (const fm_topo_t *t, const char *name);

/* Uplink index of (leaf, spine), -1 when that spine is not a parent of leaf. */
int fm_topo_uplink_find (const fm_topo_t *t, int leaf, int spine);
int fm_topo_uplink_leaf (const fm_topo_t *t, int uplink);
int fm_topo_uplink_spine (const fm_topo_t *t, int uplink);

#endif /* FM_TOPO_H */

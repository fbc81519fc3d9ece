/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_DCONF_H
#define FM_DCONF_H

#include "conf.h"

/* fabricd's configuration table (doc: etc/fabricd.conf). */
extern const fm_conf_item_t fm_dconf_table[];

#endif /* FM_DCONF_H */

/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "arena.h"
#include "report.h"

static void test_arena (void **state)
{
    json_t *o;
    char *text;
    char big[3 * 1024 * 1024 + 3];

    assert_int_equal (fm_arena_install (), 0);
    assert_int_equal (fm_arena_used (), 0);
    o = json_pack ("{s:s, s:[i, i]}", "node", "n1", "v", 1, 2);
    assert_non_null (o);
    assert_true (fm_arena_used () > 0);
    /* The text is malloc'd: it survives the reset and free() takes it. */
    text = fm_json_dump (o);
    assert_string_equal (text, "{\"node\":\"n1\",\"v\":[1,2]}");
    json_decref (o);
    fm_arena_reset ();
    assert_int_equal (fm_arena_used (), 0);
    assert_string_equal (text, "{\"node\":\"n1\",\"v\":[1,2]}");
    free (text);

    /* An allocation larger than a chunk gets its own, released at reset. */
    memset (big, 'x', sizeof (big));
    big[0] = '"';
    big[sizeof (big) - 2] = '"';
    big[sizeof (big) - 1] = '\0';
    o = json_loads (big, JSON_DECODE_ANY, NULL);
    assert_non_null (o);
    assert_int_equal (json_string_length (o), sizeof (big) - 3);
    assert_true (fm_arena_used () >= sizeof (big) - 3);
    fm_arena_reset ();
    assert_int_equal (fm_arena_used (), 0);

    /* Many small values after a reset reuse the kept chunk and then grow. */
    o = json_array ();
    for (int i = 0; i < 100000; i++) {
        assert_int_equal (json_array_append_new (o, json_integer (i)), 0);
    }
    assert_int_equal (json_integer_value (json_array_get (o, 99999)), 99999);
    fm_arena_reset ();
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_arena),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "arena.h"

static void test_arena (void **state)
{
    json_t *o;
    char *text;
    size_t bigsize = 3 * 1024 * 1024 + 3;
    char *big = malloc (bigsize);

    assert_int_equal (fm_arena_install (), 0);
    assert_int_equal (fm_arena_used (), 0);
    o = json_pack ("{s:s, s:[i, i]}", "node", "n1", "v", 1, 2);
    assert_non_null (o);
    assert_true (fm_arena_used () > 0);
    /* The text is malloc'd: it survives the reset and free() takes it. */
    text = fm_arena_json_dump (o);
    assert_string_equal (text, "{\"node\":\"n1\",\"v\":[1,2]}");
    json_decref (o);
    fm_arena_reset ();
    assert_int_equal (fm_arena_used (), 0);
    assert_string_equal (text, "{\"node\":\"n1\",\"v\":[1,2]}");
    free (text);

    /* An allocation larger than a chunk gets its own, released at reset. */
    assert_non_null (big);
    memset (big, 'x', bigsize);
    big[0] = '"';
    big[bigsize - 2] = '"';
    big[bigsize - 1] = '\0';
    o = json_loads (big, JSON_DECODE_ANY, NULL);
    assert_non_null (o);
    assert_int_equal (json_string_length (o), bigsize - 3);
    assert_true (fm_arena_used () >= bigsize - 3);
    fm_arena_reset ();
    free (big);
    assert_int_equal (fm_arena_used (), 0);

    /* Many small values after a reset reuse the kept chunk and then grow. */
    o = json_array ();
    for (int i = 0; i < 100000; i++) {
        assert_int_equal (json_array_append_new (o, json_integer (i)), 0);
    }
    assert_int_equal (json_integer_value (json_array_get (o, 99999)), 99999);
    fm_arena_reset ();
}

/* The fabric loop's thread: its values are malloc'd, outlive the HTTP
 * thread's resets, and jansson frees them (ASan/valgrind see no leak).
 */
static void *other_thread (void *arg)
{
    json_t **out = arg;

    *out = json_pack ("{s:s,s:[i,i]}", "kept", "across resets", "v", 1, 2);
    return NULL;
}

static void test_other_thread (void **state)
{
    json_t *kept = NULL, *tmp;
    pthread_t t;
    size_t used;

    assert_int_equal (fm_arena_install (), 0);
    used = fm_arena_used ();
    assert_int_equal (pthread_create (&t, NULL, other_thread, &kept), 0);
    assert_int_equal (pthread_join (t, NULL), 0);
    assert_non_null (kept);
    assert_int_equal (fm_arena_used (), used); /* not from this arena */
    /* this thread's arena is reused: the other thread's value survives */
    for (int i = 0; i < 3; i++) {
        assert_non_null (tmp = json_pack ("{s:s}", "scratch", "xxxxxxxxxxxxxxxx"));
        json_decref (tmp);
        fm_arena_reset ();
    }
    assert_string_equal (json_string_value (json_object_get (kept, "kept")),
                         "across resets");
    assert_int_equal (
        json_integer_value (json_array_get (json_object_get (kept, "v"), 1)), 2);
    /* a deep copy made here lives in the arena, the original is untouched */
    assert_non_null (tmp = json_deep_copy (kept));
    assert_true (fm_arena_used () > 0);
    fm_arena_reset ();
    json_decref (kept);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_arena),
        cmocka_unit_test (test_other_thread),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

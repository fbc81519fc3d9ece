# X_AC_SANITIZER: --enable-sanitizer=address,undefined
AC_DEFUN([X_AC_SANITIZER], [
  AC_ARG_ENABLE([sanitizer],
    [AS_HELP_STRING([--enable-sanitizer=LIST],
      [build with -fsanitize=LIST (for example address,undefined)])],
    [], [enable_sanitizer=no])
  x_ac_sanitizer=
  SANITIZER_CFLAGS=
  SANITIZER_LDFLAGS=
  AS_CASE([$enable_sanitizer],
    [no|""], [],
    [yes], [AC_MSG_ERROR([--enable-sanitizer needs a list, for example address,undefined])],
    [x_ac_sanitizer=$enable_sanitizer
     SANITIZER_CFLAGS="-fsanitize=$enable_sanitizer -fno-omit-frame-pointer -fno-sanitize-recover=all"
     SANITIZER_LDFLAGS="-fsanitize=$enable_sanitizer"
     save_CFLAGS=$CFLAGS; save_LDFLAGS=$LDFLAGS
     CFLAGS="$CFLAGS $SANITIZER_CFLAGS"; LDFLAGS="$LDFLAGS $SANITIZER_LDFLAGS"
     AC_MSG_CHECKING([whether $CC supports -fsanitize=$enable_sanitizer])
     AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])], [AC_MSG_RESULT([yes])],
       [AC_MSG_RESULT([no])
        AC_MSG_ERROR([$CC cannot build with -fsanitize=$enable_sanitizer])])
     CFLAGS=$save_CFLAGS; LDFLAGS=$save_LDFLAGS])
  AC_SUBST([SANITIZER_CFLAGS])
  AC_SUBST([SANITIZER_LDFLAGS])
  AM_CONDITIONAL([WITH_SANITIZER], [test -n "$x_ac_sanitizer"])
])

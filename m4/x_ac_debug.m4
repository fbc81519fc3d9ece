# X_AC_DEBUG: --enable-debug keeps asserts and disables optimisation; otherwise NDEBUG.
AC_DEFUN([X_AC_DEBUG], [
  AC_ARG_ENABLE([debug],
    [AS_HELP_STRING([--enable-debug], [build with asserts and -O0 -g])],
    [], [enable_debug=no])
  AS_IF([test "x$enable_debug" = xyes],
    [CFLAGS="$CFLAGS -O0 -g3"],
    [AC_DEFINE([NDEBUG], [1], [Define to disable asserts])])
])

# X_AC_WARNINGS: --enable-werror adds -Werror to the warning flags.
AC_DEFUN([X_AC_WARNINGS], [
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [], [enable_werror=no])
  WARNING_CFLAGS="-Wall -Wextra -Wformat=2 -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter"
  AS_IF([test "x$enable_werror" = xyes], [WARNING_CFLAGS="$WARNING_CFLAGS -Werror"])
  AC_SUBST([WARNING_CFLAGS])
])

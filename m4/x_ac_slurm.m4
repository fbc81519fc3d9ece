# X_AC_SLURM: --with-slurm[=PATH]; the SPANK plugin and the libslurm action backend need it.
AC_DEFUN([X_AC_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm@<:@=PATH@:>@],
      [build the SPANK plugin against Slurm installed under PATH (default: check)])],
    [], [with_slurm=check])
  x_ac_have_slurm=no
  x_ac_slurm_why=
  SLURM_CPPFLAGS=
  SLURM_LIBS=
  AS_IF([test "x$with_slurm" != xno], [
    AS_CASE([$with_slurm], [yes|check], [],
      [AS_IF([test -f "$with_slurm/include/slurm/spank.h"], [],
         [AC_MSG_ERROR([--with-slurm=$with_slurm given but slurm/spank.h was not found in $with_slurm/include])])
       SLURM_CPPFLAGS="-I$with_slurm/include"
       SLURM_LDFLAGS="-L$with_slurm/lib"])
    save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
    AC_CHECK_HEADERS([slurm/spank.h], [x_ac_have_slurm=yes],
      [x_ac_slurm_why="(slurm/spank.h not found: install libslurm-dev or pass --with-slurm=PATH)"])
    AS_IF([test "x$x_ac_have_slurm" = xyes], [
      AC_CHECK_DECLS([ESPANK_JOB_FAILURE], [], [], [[#include <slurm/spank.h>]])
      save_LDFLAGS=$LDFLAGS; LDFLAGS="$LDFLAGS $SLURM_LDFLAGS"
      AC_CHECK_LIB([slurm], [slurm_update_node],
        [SLURM_LIBS="$SLURM_LDFLAGS -lslurm"
         AC_DEFINE([HAVE_LIBSLURM], [1], [Define if libslurm is usable])])
      LDFLAGS=$save_LDFLAGS])
    CPPFLAGS=$save_CPPFLAGS
    AS_IF([test "x$with_slurm" != xcheck && test "x$x_ac_have_slurm" != xyes],
      [AC_MSG_ERROR([--with-slurm given but slurm/spank.h was not found])])
  ], [x_ac_slurm_why="(disabled by --without-slurm)"])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR],
      [where Slurm loads plugins from (default: PREFIX/lib/MULTIARCH/slurm-wlm when Debian's layout is present, else LIBDIR/slurm)])],
    [slurm_plugindir=$withval],
    [x_ac_multiarch=`$CC -print-multiarch 2>/dev/null`
     AS_IF([test -n "$x_ac_multiarch" && test -d "/usr/lib/$x_ac_multiarch/slurm-wlm"],
       [slurm_plugindir="\${prefix}/lib/$x_ac_multiarch/slurm-wlm"],
       [slurm_plugindir="\${libdir}/slurm"])])
  AC_SUBST([slurm_plugindir])
  AC_SUBST([SLURM_CPPFLAGS])
  AC_SUBST([SLURM_LIBS])
  AM_CONDITIONAL([HAVE_SLURM], [test "x$x_ac_have_slurm" = xyes])
  AM_CONDITIONAL([HAVE_LIBSLURM], [test -n "$SLURM_LIBS"])
])

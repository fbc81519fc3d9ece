# X_AC_MUNGE: munge is required (agents and fabricctl authenticate with it).
AC_DEFUN([X_AC_MUNGE], [
  AC_CHECK_HEADER([munge.h], [],
    [AC_MSG_ERROR([munge.h not found: install libmunge-dev])])
  AC_CHECK_LIB([munge], [munge_encode], [MUNGE_LIBS=-lmunge],
    [AC_MSG_ERROR([libmunge not found: install libmunge-dev])])
  AC_SUBST([MUNGE_LIBS])
])

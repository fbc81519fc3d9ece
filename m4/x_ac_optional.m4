# Optional dependencies: each one defines HAVE_<X>, an AM_CONDITIONAL and a summary variable.

# X_AC_IBVERBS: RDMA probes need libibverbs.
AC_DEFUN([X_AC_IBVERBS], [
  x_ac_have_ibverbs=no
  AC_CHECK_HEADER([infiniband/verbs.h],
    [AC_CHECK_LIB([ibverbs], [ibv_open_device],
      [x_ac_have_ibverbs=yes IBVERBS_LIBS=-libverbs
       AC_DEFINE([HAVE_IBVERBS], [1], [Define if libibverbs is usable])])])
  AS_IF([test "x$x_ac_have_ibverbs" = xno],
    [AC_MSG_NOTICE([libibverbs not found: RDMA probes disabled (install libibverbs-dev)])])
  AC_SUBST([IBVERBS_LIBS])
  AM_CONDITIONAL([HAVE_IBVERBS], [test "x$x_ac_have_ibverbs" = xyes])
])

# X_AC_PMIX: fabric-check needs PMIx (Debian puts pmix.h in a private directory).
AC_DEFUN([X_AC_PMIX], [
  PKG_CHECK_MODULES([PMIX], [pmix >= 4], [x_ac_have_pmix=yes
     AC_DEFINE([HAVE_PMIX], [1], [Define if PMIx is usable])],
    [x_ac_have_pmix=no
     AC_MSG_NOTICE([PMIx not found: fabric-check will not be built (install libpmix-dev)])])
  AM_CONDITIONAL([HAVE_PMIX], [test "x$x_ac_have_pmix" = xyes])
])

# X_AC_CMOCKA: the C unit tests are part of every build, so cmocka is required.
AC_DEFUN([X_AC_CMOCKA], [
  PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1], [],
    [AC_MSG_ERROR([cmocka >= 1.1 is required for the unit tests: install libcmocka-dev])])
])

# X_AC_NFQUEUE: the minicluster's delay fault holds packets in user space.
AC_DEFUN([X_AC_NFQUEUE], [
  PKG_CHECK_MODULES([NFQUEUE], [libnetfilter_queue], [x_ac_have_nfqueue=yes],
    [x_ac_have_nfqueue=no
     AC_MSG_NOTICE([libnetfilter_queue not found: minicluster delay faults disabled (install libnetfilter-queue-dev)])])
  AM_CONDITIONAL([HAVE_NFQUEUE], [test "x$x_ac_have_nfqueue" = xyes])
])

# X_AC_LIBFUZZER: fuzz targets link with libFuzzer when the compiler has it (clang);
# otherwise they link with a standalone driver that replays corpus files.
AC_DEFUN([X_AC_LIBFUZZER], [
  AC_MSG_CHECKING([whether $CC links -fsanitize=fuzzer])
  save_CFLAGS=$CFLAGS; CFLAGS="$CFLAGS -fsanitize=fuzzer"
  AC_LINK_IFELSE([AC_LANG_SOURCE([[
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput (const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput (const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }]])],
    [x_ac_have_libfuzzer=yes], [x_ac_have_libfuzzer=no])
  CFLAGS=$save_CFLAGS
  AC_MSG_RESULT([$x_ac_have_libfuzzer])
  AM_CONDITIONAL([HAVE_LIBFUZZER], [test "x$x_ac_have_libfuzzer" = xyes])
])

# SPDX-License-Identifier: GPL-2.0-or-later
# Included by Makefile.am.
#
# A test kernel with the proposed IORING_OP_COPY_FILE_RANGE (see
# tests/kernel/README.md). cfr-probe is built with "make check" but is not
# in TESTS: it needs that kernel, which only the guest runs. Run it there
# with "make check-cfr-guest".

check_PROGRAMS += tests/kernel/cfr-probe
tests_kernel_cfr_probe_SOURCES = tests/kernel/cfr-probe.c tests/unit/tap.h
tests_kernel_cfr_probe_LDADD = $(URING_LIBS)

EXTRA_DIST += \
	tests/kernel/README.md \
	tests/kernel/0001-io_uring-add-IORING_OP_COPY_FILE_RANGE.patch \
	tests/kernel/config.fragment \
	tests/kernel/build-kernel.sh \
	tests/kernel/run-cfr-guest.sh \
	tests/kernel/cfr-guest.sh \
	tests/kernel/cfr-suite.sh

.PHONY: check-cfr-guest
check-cfr-guest: tests/kernel/cfr-probe
	UFS_BUILDDIR='$(abs_top_builddir)' $(top_srcdir)/tests/kernel/run-cfr-guest.sh

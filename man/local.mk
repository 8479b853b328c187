# SPDX-License-Identifier: GPL-2.0-or-later
# Included by Makefile.am.
#
# The manual: the man pages, the operator's guides in docs/, and the tests
# that keep the pages complete and lint-free.

dist_man_MANS = man/uringfs.8 man/uringfs.conf.5

EXTRA_DIST += \
	docs/architecture.md \
	docs/configuration.md \
	docs/kernels.md \
	docs/operations.md \
	docs/troubleshooting.md

ops_docs_tests = \
	tests/ops/docs-keys.sh \
	tests/ops/man-render.sh
TESTS += $(ops_docs_tests)
EXTRA_DIST += $(ops_docs_tests) tests/ops/lib.sh

# SPDX-License-Identifier: GPL-2.0-or-later
# Included by Makefile.am.
#
# What a deployment needs besides the binary and the man pages: the systemd
# template unit (generated from its .in) and the example configuration,
# installed as $(sysconfdir)/uringfs/uringfs.conf.example so that a real
# uringfs.conf is never overwritten.  And the tests of both, of the unit's
# system call filter, of sd_notify and of fstab mounts through mount.fuse3.

systemdsystemunit_DATA = systemd/uringfs@.service
EXTRA_DIST += systemd/uringfs@.service.in config/uringfs.conf

systemd/uringfs@.service: $(srcdir)/systemd/uringfs@.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	$(SED) -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/systemd/uringfs@.service.in >$@.tmp && mv $@.tmp $@

clean-local: ufs-clean-systemd
ufs-clean-systemd:
	rm -f systemd/uringfs@.service systemd/uringfs@.service.tmp

ufs_confdir = $(sysconfdir)/uringfs
install-data-local: ufs-install-config-example
ufs-install-config-example:
	$(MKDIR_P) '$(DESTDIR)$(ufs_confdir)'
	$(INSTALL_DATA) $(srcdir)/config/uringfs.conf '$(DESTDIR)$(ufs_confdir)/uringfs.conf.example'

uninstall-local: ufs-uninstall-config-example
ufs-uninstall-config-example:
	rm -f '$(DESTDIR)$(ufs_confdir)/uringfs.conf.example'

.PHONY: ufs-clean-systemd ufs-install-config-example ufs-uninstall-config-example

ops_deploy_tests = \
	tests/ops/unit-verify.sh \
	tests/ops/unit-seccomp.sh \
	tests/ops/notify.sh \
	tests/ops/fstab-mount.sh \
	tests/ops/quiet-mount.sh \
	tests/ops/remount.sh \
	tests/ops/namespace-mounts.sh
TESTS += $(ops_deploy_tests)
EXTRA_DIST += $(ops_deploy_tests) tests/ops/notify-listen.py tests/ops/reap.py
tests/ops/unit-verify.log: systemd/uringfs@.service

# unit-seccomp.sh runs the mount suite's core under the unit's system call
# filter, which this helper installs (libseccomp) before it runs the daemon.
check_PROGRAMS += tests/ops/unit-filter
tests_ops_unit_filter_SOURCES = tests/ops/unit-filter.c
tests_ops_unit_filter_CFLAGS = $(AM_CFLAGS) $(SECCOMP_CFLAGS)
tests_ops_unit_filter_LDADD = $(SECCOMP_LIBS)
tests/ops/unit-seccomp.log: systemd/uringfs@.service tests/ops/unit-filter

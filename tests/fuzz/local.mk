# SPDX-License-Identifier: GPL-2.0-or-later
# Included by Makefile.am.
#
# libFuzzer harnesses for the code that reads untrusted bytes: the request
# decoder, the config file, the -o string, INIT negotiation (see
# tests/fuzz/README.md).  clang builds them straight from the daemon's
# sources with -fsanitize=fuzzer,address,undefined, never from gcc's objects.
#
#   make fuzz-build      the harnesses
#   make fuzz            each harness for FUZZ_SECONDS (600); -j2 runs two at once
#   make fuzz-merge      fold what `make fuzz` found into tests/fuzz/corpus (-merge=1)
#   make fuzz-seed       rewrite the seeds and dictionaries from the daemon's tables
#   make check-valgrind  the mount suite with the daemon under valgrind (slow)
#
# make check runs tests/fuzz/check.sh: the regressions, the corpus and
# 30 s of fuzzing per harness; it skips when clang or libFuzzer is missing.
# FUZZ_DAEMON=DIR builds the harnesses against another copy of daemon/.

FUZZ_CC = clang
FUZZ_SECONDS = 600
FUZZ_DAEMON = $(srcdir)/daemon
FUZZ_SANITIZE = -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer -std=gnu11
FUZZ_CPPFLAGS = -D_GNU_SOURCE -DSYSCONFDIR='"$(sysconfdir)"' -I$(FUZZ_DAEMON) \
	-I$(srcdir)/tests/fuzz $(URING_CFLAGS) $(FUSE3_CFLAGS) $(INIH_CFLAGS)
# The harnesses are held to the project's warnings; the daemon's files are
# gcc's business (-Werror there), so clang only reports on them.
fuzz_warnings = -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes \
	-Wstrict-prototypes -Wno-missing-field-initializers
fuzz_libs = $(INIH_LIBS) $(FUSE3_LIBS) -lm

fuzz_names = fuzz-decode fuzz-config fuzz-mountopts fuzz-init
fuzz_programs = \
	tests/fuzz/fuzz-decode \
	tests/fuzz/fuzz-config \
	tests/fuzz/fuzz-mountopts \
	tests/fuzz/fuzz-init
fuzz_headers = \
	$(srcdir)/tests/fuzz/fuzz.h \
	$(FUZZ_DAEMON)/config.h \
	$(FUZZ_DAEMON)/decode.h \
	$(FUZZ_DAEMON)/fuse_abi.h \
	$(FUZZ_DAEMON)/log.h \
	$(FUZZ_DAEMON)/mount.h \
	$(FUZZ_DAEMON)/req.h \
	$(FUZZ_DAEMON)/init_negotiate.h
fuzz_decode_daemon = $(FUZZ_DAEMON)/decode.c
fuzz_config_daemon = $(FUZZ_DAEMON)/config.c $(FUZZ_DAEMON)/config_check.c $(FUZZ_DAEMON)/config_file.c $(FUZZ_DAEMON)/log.c
fuzz_mountopts_daemon = $(FUZZ_DAEMON)/mount.c $(FUZZ_DAEMON)/mount_keeper.c $(FUZZ_DAEMON)/config.c \
	$(FUZZ_DAEMON)/log.c
fuzz_init_daemon = $(FUZZ_DAEMON)/init_negotiate.c $(FUZZ_DAEMON)/config.c $(FUZZ_DAEMON)/config_check.c $(FUZZ_DAEMON)/log.c
fuzz_gen_daemon = $(FUZZ_DAEMON)/decode.c $(FUZZ_DAEMON)/config.c $(FUZZ_DAEMON)/log.c

# The harness with the project's warnings and -Werror, then the link with the
# daemon's files (clang only reports on those: gcc -Werror guards them).
fuzz_compile = $(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) $(FUZZ_SANITIZE)
fuzz_daemon_warnings = -Wall -Wextra -Wno-missing-field-initializers

tests/fuzz/fuzz-decode: $(srcdir)/tests/fuzz/fuzz-decode.c $(fuzz_decode_daemon) $(fuzz_headers)
	$(AM_V_CC)$(MKDIR_P) tests/fuzz && \
	$(fuzz_compile) $(fuzz_warnings) -c -o $@.o $(srcdir)/tests/fuzz/fuzz-decode.c && \
	$(fuzz_compile) $(fuzz_daemon_warnings) -o $@ $@.o $(fuzz_decode_daemon) $(fuzz_libs)
tests/fuzz/fuzz-config: $(srcdir)/tests/fuzz/fuzz-config.c $(fuzz_config_daemon) $(fuzz_headers)
	$(AM_V_CC)$(MKDIR_P) tests/fuzz && \
	$(fuzz_compile) $(fuzz_warnings) -c -o $@.o $(srcdir)/tests/fuzz/fuzz-config.c && \
	$(fuzz_compile) $(fuzz_daemon_warnings) -o $@ $@.o $(fuzz_config_daemon) $(fuzz_libs)
tests/fuzz/fuzz-mountopts: $(srcdir)/tests/fuzz/fuzz-mountopts.c $(fuzz_mountopts_daemon) \
		$(fuzz_headers)
	$(AM_V_CC)$(MKDIR_P) tests/fuzz && \
	$(fuzz_compile) $(fuzz_warnings) -c -o $@.o $(srcdir)/tests/fuzz/fuzz-mountopts.c && \
	$(fuzz_compile) $(fuzz_daemon_warnings) -o $@ $@.o $(fuzz_mountopts_daemon) $(fuzz_libs)
tests/fuzz/fuzz-init: $(srcdir)/tests/fuzz/fuzz-init.c $(fuzz_init_daemon) $(fuzz_headers)
	$(AM_V_CC)$(MKDIR_P) tests/fuzz && \
	$(fuzz_compile) $(fuzz_warnings) -c -o $@.o $(srcdir)/tests/fuzz/fuzz-init.c && \
	$(fuzz_compile) $(fuzz_daemon_warnings) -o $@ $@.o $(fuzz_init_daemon) $(fuzz_libs)
# The seed generator needs no sanitizer.
tests/fuzz/gen-corpus: $(srcdir)/tests/fuzz/gen-corpus.c $(fuzz_gen_daemon) $(fuzz_headers)
	$(AM_V_CC)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) $(fuzz_warnings) -c -o $@.o \
		$(srcdir)/tests/fuzz/gen-corpus.c && \
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) $(fuzz_daemon_warnings) -o $@ $@.o \
		$(fuzz_gen_daemon) $(fuzz_libs)

# What fuzz.sh needs.
fuzz_env = UFS_SRCDIR='$(abs_top_srcdir)' UFS_BUILDDIR='$(abs_top_builddir)' \
	FUZZ_SECONDS='$(FUZZ_SECONDS)'

fuzz-build: $(fuzz_programs)

fuzz: fuzz-run-decode fuzz-run-config fuzz-run-mountopts fuzz-run-init
fuzz-run-decode: tests/fuzz/fuzz-decode
	$(fuzz_env) bash $(srcdir)/tests/fuzz/fuzz.sh run fuzz-decode
fuzz-run-config: tests/fuzz/fuzz-config
	$(fuzz_env) bash $(srcdir)/tests/fuzz/fuzz.sh run fuzz-config
fuzz-run-mountopts: tests/fuzz/fuzz-mountopts
	$(fuzz_env) bash $(srcdir)/tests/fuzz/fuzz.sh run fuzz-mountopts
fuzz-run-init: tests/fuzz/fuzz-init
	$(fuzz_env) bash $(srcdir)/tests/fuzz/fuzz.sh run fuzz-init

fuzz-merge: $(fuzz_programs)
	$(fuzz_env) bash $(srcdir)/tests/fuzz/fuzz.sh merge $(fuzz_names)

fuzz-seed: tests/fuzz/gen-corpus
	tests/fuzz/gen-corpus $(srcdir)/tests/fuzz

# The check part: builds the harnesses itself (make fuzz-build), or skips.
TESTS += tests/fuzz/check.sh

clean-local: ufs-clean-fuzz
ufs-clean-fuzz:
	rm -f $(fuzz_programs) tests/fuzz/gen-corpus tests/fuzz/*.o
	rm -rf tests/fuzz/work tests/fuzz/crashes tests/fuzz/logs
	rm -rf tests/valgrind/probe tests/valgrind/logs-* tests/valgrind/*.tap

# The mount suite with the daemon under valgrind (tests/valgrind/README.md).
check-valgrind: daemon/uringfs
	UFS_SRCDIR='$(abs_top_srcdir)' UFS_BUILDDIR='$(abs_top_builddir)' \
		bash $(srcdir)/tests/valgrind/run.sh

.PHONY: fuzz fuzz-build fuzz-merge fuzz-seed fuzz-run-decode fuzz-run-config \
	fuzz-run-mountopts fuzz-run-init ufs-clean-fuzz check-valgrind

EXTRA_DIST += \
	tests/fuzz/README.md \
	tests/fuzz/check.sh \
	tests/fuzz/fuzz.sh \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz-decode.c \
	tests/fuzz/fuzz-config.c \
	tests/fuzz/fuzz-mountopts.c \
	tests/fuzz/fuzz-init.c \
	tests/fuzz/gen-corpus.c \
	tests/fuzz/corpus \
	tests/fuzz/dict \
	tests/fuzz/regressions \
	tests/valgrind/README.md \
	tests/valgrind/probe.c \
	tests/valgrind/run.sh \
	tests/valgrind/uringfs-valgrind \
	tests/valgrind/uringfs.supp

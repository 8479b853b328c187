/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line (cli.c).
 */
#ifndef UFS_CLI_H
#define UFS_CLI_H

#include <stdbool.h>

#include "daemon.h"

/* What the command line asks for besides a mount. */
struct ufs_cli {
	const char *check_config;	/* --check-config FILE */
	const char *stats_mountpoint;	/* --stats MOUNTPOINT */
	bool stats_prometheus;		/* --format=prometheus */
	bool stats_inflight;		/* --in-flight: the requests in flight only */
	bool print_config;
	bool debug;
	bool take_over;			/* --take-over [SOURCE] MOUNTPOINT */
	bool remount;			/* -o remount,...: no daemon (remount.c) */
	char settings[4096];		/* every -o as given, comma-joined (hand-over record) */
};

/* Options into d and cli.  Returns 0, or an exit status (>0) when they are done with. */
int ufs_cli_parse(struct ufs_daemon *d, struct ufs_cli *cli, int argc, char **argv);
/* The file, then cross-key checks; a missing default file is fine.  Errors on stderr. */
int ufs_cli_load_config(struct ufs_config *cfg);
/* --check-config FILE: the exit status. */
int ufs_cli_check_config(const char *path);
/* --stats MOUNTPOINT: the control file's text (or Prometheus's) on stdout; the exit status. */
int ufs_cli_print_stats(struct ufs_daemon *d, const struct ufs_cli *cli);
/* path must be a directory; else the error on stderr. */
int ufs_cli_check_dir(const char *what, const char *path);

#endif /* UFS_CLI_H */

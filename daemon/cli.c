// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The command line: options, the configuration file they name, and the
 * commands that end there (--check-config, --print-config, --stats).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "config_check.h"
#include "config_file.h"
#include "handover_status.h"
#include "stats_prom.h"

enum {
	OPT_CONFIG = 256,
	OPT_CHECK_CONFIG,
	OPT_PRINT_CONFIG,
	OPT_STATS,
	OPT_FORMAT,
	OPT_IN_FLIGHT,
	OPT_VERSION,
	OPT_ZERO_COPY,
	OPT_NO_ZERO_COPY,
	OPT_SET,
	OPT_TAKE_OVER,
};

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "foreground", no_argument, NULL, 'f' },
	{ "debug", no_argument, NULL, 'd' },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check-config", required_argument, NULL, OPT_CHECK_CONFIG },
	{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "in-flight", no_argument, NULL, OPT_IN_FLIGHT },
	{ "zero-copy", no_argument, NULL, OPT_ZERO_COPY },
	{ "no-zero-copy", no_argument, NULL, OPT_NO_ZERO_COPY },
	{ "set", required_argument, NULL, OPT_SET },
	{ "take-over", no_argument, NULL, OPT_TAKE_OVER },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: uringfs [OPTIONS] SOURCE MOUNTPOINT\n"
		"       uringfs --take-over [OPTIONS] [SOURCE] MOUNTPOINT\n"
		"       uringfs --check-config FILE\n"
		"       uringfs --print-config [OPTIONS] [SOURCE MOUNTPOINT]\n"
		"       uringfs --stats MOUNTPOINT [--format=text|prometheus]\n"
		"       uringfs --stats MOUNTPOINT --in-flight\n"
		"\n"
		"Serve the directory SOURCE at MOUNTPOINT through FUSE, over io_uring where\n"
		"the kernel offers it.\n"
		"\n"
		"Options:\n"
		"  -f, --foreground        stay in the foreground, log to stderr\n"
		"  -d, --debug             foreground with log_level=debug\n"
		"  -o OPT[,OPT...]         settings and mount options (key=value, see uringfs(8))\n"
		"      --config FILE       read settings from FILE (default %s)\n"
		"      --set KEY=VALUE     one setting, above -o and the file\n"
		"      --zero-copy         zero_copy=on\n"
		"      --no-zero-copy      zero_copy=off\n"
		"      --check-config FILE validate FILE and exit\n"
		"      --print-config      print the effective settings and their sources\n"
		"      --take-over         serve MOUNTPOINT in place of its running daemon,\n"
		"                          without unmounting (SOURCE and -o: the running one's)\n"
		"      --stats MOUNTPOINT  print the counters of a running mount\n"
		"      --format=prometheus with --stats: Prometheus's text format\n"
		"      --in-flight         with --stats: the requests in flight, oldest first\n"
		"  -h, --help              this text\n"
		"      --version           the version\n",
		UFS_DEFAULT_CONFIG);
}

static int cli_set(struct ufs_daemon *d, const char *key, const char *value)
{
	struct ufs_config_error err;

	if (ufs_config_set(&d->cfg, key, value, UFS_SRC_CMDLINE, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return -EINVAL;
	}
	return 0;
}

static int cli_set_pair(struct ufs_daemon *d, char *pair)
{
	char *eq = strchr(pair, '=');

	if (eq)
		*eq++ = '\0';
	return cli_set(d, pair, eq);
}

/* Returns 0, or an exit status (>0) when the arguments are done with. */
int ufs_cli_parse(struct ufs_daemon *d, struct ufs_cli *cli, int argc, char **argv)
{
	struct ufs_config_error err;
	bool format_given = false;
	int c;

	while ((c = getopt_long(argc, argv, "hfdo:", long_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_VERSION:
#ifdef UFS_DEBUG
			printf("uringfs %s (debug build: UFS_BUG_ON, UFS_DEBUG_PAUSE)\n",
			       PACKAGE_VERSION);
#else
			printf("uringfs %s\n", PACKAGE_VERSION);
#endif
			exit(0);
		case 'f':
			d->foreground = true;
			break;
		case 'd':
			d->foreground = true;
			cli->debug = true;
			break;
		case 'o':
			/* Parsed after the loop: a remount is known only then. */
			if (strlen(cli->settings) + strlen(optarg) + 2 > sizeof(cli->settings)) {
				fprintf(stderr, "uringfs: -o: too long\n");
				return 1;
			}
			if (cli->settings[0])
				strcat(cli->settings, ",");
			strcat(cli->settings, optarg);
			break;
		case OPT_TAKE_OVER:
			cli->take_over = true;
			break;
		case OPT_CONFIG:
			snprintf(d->cfg.config_path, sizeof(d->cfg.config_path), "%s", optarg);
			d->cfg.config_path_explicit = true;
			break;
		case OPT_CHECK_CONFIG:
			cli->check_config = optarg;
			break;
		case OPT_PRINT_CONFIG:
			cli->print_config = true;
			break;
		case OPT_STATS:
			cli->stats_mountpoint = optarg;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "prometheus")) {
				fprintf(stderr, "uringfs: --format=%s: expected text or prometheus\n",
					optarg);
				return 1;
			}
			cli->stats_prometheus = !strcmp(optarg, "prometheus");
			format_given = true;
			break;
		case OPT_IN_FLIGHT:
			cli->stats_inflight = true;
			break;
		case OPT_ZERO_COPY:
		case OPT_NO_ZERO_COPY:
			if (cli_set(d, "zero_copy", c == OPT_ZERO_COPY ? "on" : "off"))
				return 1;
			break;
		case OPT_SET:
			if (cli_set_pair(d, optarg))
				return 1;
			break;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (cli->debug && cli_set(d, "log_level", "debug"))
		return 1;
	if (cli->settings[0] &&
	    ufs_mount_opts_parse(cli->settings, &d->cfg, &d->mount_opts, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return 1;
	}
	cli->remount = d->mount_opts.remount;
	if (cli->remount &&
	    (cli->take_over || cli->print_config || cli->check_config || cli->stats_mountpoint)) {
		fprintf(stderr,
			"uringfs: -o remount is mount(8)'s remount of a live mount: "
				"not with --take-over, --print-config, --check-config or --stats\n");
		return 1;
	}
	if (!cli->remount && d->mount_opts.nosymfollow && geteuid()) {
		fprintf(stderr, "uringfs: mount option nosymfollow: only root can set it "
				"(fusermount3 does not)\n");
		return 1;
	}
	if (format_given && !cli->stats_mountpoint) {
		fprintf(stderr, "uringfs: --format is for --stats\n");
		return 1;
	}
	if (cli->stats_inflight && (!cli->stats_mountpoint || cli->stats_prometheus)) {
		fprintf(stderr, "uringfs: --in-flight is for --stats in text format\n");
		return 1;
	}
	/*
	 * Two files named: one would be read and the other silently not.
	 * --stats reads the file -o config= names too, as the mount did.
	 */
	if (d->mount_opts.has_config && d->cfg.config_path_explicit &&
	    strcmp(d->mount_opts.config, d->cfg.config_path)) {
		fprintf(stderr, "uringfs: mount option config=%s: --config %s names another file\n",
			d->mount_opts.config, d->cfg.config_path);
		return 1;
	}
	if (d->mount_opts.has_config && !d->cfg.config_path_explicit) {
		snprintf(d->cfg.config_path, sizeof(d->cfg.config_path), "%s",
			 d->mount_opts.config);
		d->cfg.config_path_explicit = true;
	}
	if (cli->check_config || cli->stats_mountpoint)
		return 0;
	/* mount.fuse3 puts -o after the positional arguments: getopt permutes them. */
	if (argc - optind == 2) {
		d->source = argv[optind];
		d->mountpoint = argv[optind + 1];
	} else if (cli->take_over && argc - optind == 1) {
		d->mountpoint = argv[optind];	/* SOURCE: the running daemon's */
	} else if (!(cli->print_config && argc == optind)) {
		fprintf(stderr, "uringfs: expected SOURCE and MOUNTPOINT (try --help)\n");
		return 1;
	}
	return 0;
}

/* The file, then cross-key checks.  A missing default file is fine. */
int ufs_cli_load_config(struct ufs_config *cfg)
{
	struct ufs_config_error err;
	int ret;

	ret = ufs_config_load_file(cfg, cfg->config_path, &err);
	if (ret == -ENOENT && !cfg->config_path_explicit)
		ret = 0;
	if (!ret)
		ret = ufs_config_validate(cfg, &err);
	if (ret) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return ret;
	}
	return 0;
}

int ufs_cli_check_config(const char *path)
{
	struct ufs_config cfg;
	struct ufs_config_error err;

	ufs_config_defaults(&cfg);
	if (ufs_config_load_file(&cfg, path, &err) || ufs_config_validate(&cfg, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return 1;
	}
	printf("%s: OK\n", path);
	return 0;
}

/*
 * The control file's "inflight ..." lines (slow.c): with --in-flight only
 * those, without the prefix; else every line but those.  In place; the
 * new length.
 */
static size_t inflight_filter(char *text, bool inflight)
{
	static const char prefix[] = "inflight ";
	char *out = text, *line = text;

	while (*line) {
		char *end = strchrnul(line, '\n');
		size_t n = end - line + (*end == '\n');
		bool is = !strncmp(line, prefix, sizeof(prefix) - 1);

		if (is && inflight) {
			memmove(out, line + sizeof(prefix) - 1, n - (sizeof(prefix) - 1));
			out += n - (sizeof(prefix) - 1);
		} else if (!is && !inflight) {
			memmove(out, line, n);
			out += n;
		}
		line += n;
	}
	*out = '\0';
	return out - text;
}

/* The control file's "inflight_withheld N" (other users' requests, slow.c), or 0. */
static unsigned long inflight_withheld(const char *text)
{
	static const char line[] = "\ninflight_withheld ";
	const char *at = strstr(text, line);

	return at ? strtoul(at + sizeof(line) - 1, NULL, 10) : 0;
}

int ufs_cli_print_stats(struct ufs_daemon *d, const struct ufs_cli *cli)
{
	const char *mountpoint = cli->stats_mountpoint;
	char path[PATH_MAX], buf[4096];
	char *text = NULL;
	unsigned long withheld;
	size_t len = 0;
	FILE *f;
	ssize_t n;
	int fd, ret;

	char why[PATH_MAX + 600];

	/* Nobody serves it: reading the control file would wait for a daemon. */
	if (!ufs_handover_status_read(mountpoint, why, sizeof(why))) {
		fprintf(stderr, "uringfs: %s\n", why);
		return 2;
	}
	if (ufs_cli_load_config(&d->cfg))
		return 1;
	if (!d->cfg.stats_file[0]) {
		fprintf(stderr, "uringfs: stats_file=off: no control file to read\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s", mountpoint, d->cfg.stats_file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		/* The daemon's bound on ordinary users' opens (control_opens.h). */
		fprintf(stderr, "uringfs: %s: %m: too many opens of the control file by %s "
			"(root and the mount's owner are never refused)\n", path,
			errno == EMFILE ? "this user" : "ordinary users");
		return 1;
	}
	if (fd < 0) {
		fprintf(stderr, "uringfs: %s: %m (is %s a uringfs mount?)\n", path, mountpoint);
		return 1;
	}
	/* One snapshot, whole: the control file's text is taken at open. */
	f = open_memstream(&text, &len);
	if (!f) {
		close(fd);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, f);
	if (n < 0)
		fprintf(stderr, "uringfs: %s: %m\n", path);
	close(fd);
	if (fclose(f) || n < 0) {
		free(text);
		return 1;
	}
	withheld = cli->stats_inflight ? inflight_withheld(text) : 0;
	len = inflight_filter(text, cli->stats_inflight);
	if (cli->stats_prometheus)
		ret = ufs_stats_prometheus(text, mountpoint, stdout);
	else
		ret = fwrite(text, 1, len, stdout) == len ? 0 : -EIO;
	free(text);
	if (!ret && fflush(stdout))
		ret = -errno;
	if (ret)
		fprintf(stderr, "uringfs: writing the stats: %s\n", strerror(-ret));
	else if (withheld)
		fprintf(stderr, "uringfs: requests of other users not listed: %lu (%s)\n", withheld,
			"root and the mount's owner see them");
	return ret ? 1 : 0;
}

int ufs_cli_check_dir(const char *what, const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		fprintf(stderr, "uringfs: %s %s: %m\n", what, path);
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "uringfs: %s %s: not a directory\n", what, path);
		return -ENOTDIR;
	}
	return 0;
}

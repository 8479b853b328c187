// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The serving daemon's settings, for mount -o remount (running.h).
 *
 * A remount starts no daemon (remount.c): the kernel applies the mount's
 * flags and nothing else.  mount(8) still hands the helper every word of
 * the new list: the fstab line's (daemon settings and all) when there is
 * one, else the mount table's (allow_other, default_permissions, user_id=
 * ...).  A word the remount cannot apply is refused unless it is no change:
 * equal to what the mount runs with.  So the daemon writes that down where
 * the remount can read it without a request to the mount (which would wait
 * on a stopped daemon): "settings-<uid>-<hash>" in the runtime directory,
 * one "name value" a line, the connection first (a file a dead daemon
 * left names another mount's).  The runtime directory is the euid's own
 * (handover_status.c), so root's remount reads only root's daemons'.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handover_status.h"
#include "running.h"

#define RUNNING_MAX 65536
#define LINE_MAX_LEN 8192	/* the longest line: -o, the kernel's options */

static int running_path(const char *real, char *path, size_t len, bool make_dir)
{
	return ufs_handover_runtime_name(real, "settings", path, len, make_dir);
}

void ufs_running_publish(const char *real, unsigned int conn_id, const char *source,
			 const struct ufs_config *cfg, const struct ufs_mount_opts *mo,
			 const char *settings)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 80], kernel[sizeof(mo->kernel) + 64];
	char value[PATH_MAX];
	const char *key;
	FILE *f;
	int fd;

	if (running_path(real, path, sizeof(path), true) ||
	    snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return;
	}
	ufs_mount_kernel_options(cfg, mo, kernel, sizeof(kernel));
	fprintf(f, "conn %u\nnodiratime %d\n", conn_id, mo->nodiratime);
	for (size_t i = 0; (key = ufs_config_key_at(i)); i++) {
		if (!ufs_config_format(cfg, key, value, sizeof(value)))
			fprintf(f, "set %s %s\n", key, value);
	}
	/* Names last: a newline in one cannot forge a line read before it. */
	fprintf(f, "kernel %s\nsettings %s\nconfig %s\nsource %s\n", kernel, settings,
		cfg->config_path, source);
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
}

void ufs_running_forget(const char *real, unsigned int conn_id)
{
	char path[PATH_MAX + 64], line[32], want[32];
	FILE *f;

	if (running_path(real, path, sizeof(path), false))
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	/* Not a file a daemon mounted there since has written. */
	snprintf(want, sizeof(want), "conn %u\n", conn_id);
	if (fgets(line, sizeof(line), f) && !strcmp(line, want))
		unlink(path);
	fclose(f);
}

/* The file of the mount at mountpoint (connection conn), "\n" first; NULL if none. */
static char *running_read(const char *mountpoint, long conn)
{
	char real[PATH_MAX], path[PATH_MAX + 64], want[32];
	char *text = calloc(1, RUNNING_MAX + 2);
	ssize_t n = 0, got;
	int fd = -1;

	if (!text || ufs_mount_real_path(mountpoint, real, sizeof(real)) ||
	    running_path(real, path, sizeof(path), false) ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		goto none;
	text[0] = '\n';
	while (n < RUNNING_MAX && (got = read(fd, text + 1 + n, RUNNING_MAX - n)) > 0)
		n += got;
	close(fd);
	snprintf(want, sizeof(want), "\nconn %ld\n", conn);
	if (!strncmp(text, want, strlen(want)))
		return text;
none:
	free(text);
	return NULL;
}

/* The value of the first line "name VALUE" into buf (len bytes): buf, or NULL. */
static const char *field(const char *text, const char *name, char *buf, size_t len)
{
	size_t n = strlen(name), end;
	const char *p;

	for (p = strstr(text, "\n"); p; p = strstr(p + 1, "\n")) {
		if (!strncmp(p + 1, name, n) && p[1 + n] == ' ')
			break;
	}
	if (!p)
		return NULL;
	p += 2 + n;
	end = strcspn(p, "\n");
	if (end >= len)
		return NULL;
	memcpy(buf, p, end);
	buf[end] = '\0';
	return buf;
}

bool ufs_words_have(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p; p = strchr(p, ',')) {
		p += *p == ',';
		if (!strncmp(p, word, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

struct check {
	const char *mountpoint, *super;
	char *text;			/* the running daemon's file, or NULL */
	struct ufs_config given;	/* its -o alone, on the defaults */
	struct ufs_config word;		/* the word looked at */
	char running[PATH_MAX], asked[PATH_MAX];
};

/* The kernel's: only a new mount changes it.  The daemon's: a new daemon too. */
static int refuse(const struct check *c, const char *word, const char *why, bool daemons)
{
	fprintf(stderr,
		"uringfs: remount %s: %s cannot change on a live uringfs mount (%s): "
		"unmount and mount again%s, nothing changed\n",
		c->mountpoint, word, why,
		daemons ? " or start a daemon with it (uringfs --take-over)" : "");
	return 1;
}

static int unknown(const struct check *c, const char *word)
{
	return refuse(c, word,
		      "the running daemon's settings are unknown here: not even an unchanged "
		      "value can be told",
		      true);
}

/* A word that names one of the daemon's settings, key: its value is in c->word. */
static int check_setting(struct check *c, const char *word, const char *key)
{
	char line[80], why[PATH_MAX + 128];

	if (ufs_config_format(&c->word, key, c->asked, sizeof(c->asked)))
		return 0;
	/* The same as the daemon was given (an fstab line passed back)... */
	if (ufs_config_is_set(&c->given, key) &&
	    !ufs_config_format(&c->given, key, c->running, sizeof(c->running)) &&
	    !strcmp(c->running, c->asked))
		return 0;
	/* ... or as it runs with (from its file, or the default). */
	snprintf(line, sizeof(line), "set %s", key);
	if (!c->text || !field(c->text, line, c->running, sizeof(c->running)))
		return unknown(c, word);
	if (!strcmp(c->running, c->asked))
		return 0;
	snprintf(why, sizeof(why), "a daemon setting; the running daemon has %s=%.*s", key,
		 PATH_MAX / 2, c->running);
	return refuse(c, word, why, true);
}

static const char *const kernel_keys[] = {
	"fsname", "max_read", "context", "fscontext", "defcontext", "rootcontext", NULL,
};
static const char *const fuse_keys[] = { "user_id", "group_id", "rootmode", NULL };

static bool in_list(const char *const *list, const char *key)
{
	for (; *list; list++) {
		if (!strcmp(*list, key))
			return true;
	}
	return false;
}

static int check_word(char *word, void *arg)
{
	struct check *c = arg;
	struct ufs_config_error err;
	char key[64], buf[LINE_MAX_LEN];
	const char *value = strchr(word, '=');
	size_t n = value ? (size_t)(value - word) : strlen(word);

	/* The kernel's own view of the mount: allow_other, user_id=0, max_read=... */
	if (!*word || ufs_words_have(c->super, word) || n >= sizeof(key))
		return 0;
	memcpy(key, word, n);
	key[n] = '\0';
	value = value ? value + 1 : NULL;
	if (value && in_list(fuse_keys, key))
		return refuse(c, word, "the kernel keeps it as mounted", false);
	if (value && in_list(kernel_keys, key)) {
		if (!c->text)
			return unknown(c, word);
		if ((field(c->text, "kernel", buf, sizeof(buf)) && ufs_words_have(buf, word)) ||
		    (!strcmp(key, "fsname") && field(c->text, "source", buf, sizeof(buf)) &&
		     !strcmp(buf, value)))
			return 0;
		return refuse(c, word, "the kernel keeps it as mounted", false);
	}
	if (value && !strcmp(key, "config")) {
		if (!c->text || !field(c->text, "config", buf, sizeof(buf)))
			return unknown(c, word);
		if (!strcmp(buf, value))
			return 0;
		return refuse(c, word, "the running daemon read another file; a remount reads none",
			      true);
	}
	if (!value && (!strcmp(key, "nodiratime") || !strcmp(key, "diratime"))) {
		if (!c->text || !field(c->text, "nodiratime", buf, sizeof(buf)))
			return unknown(c, word);
		if ((buf[0] == '1') == !strcmp(key, "nodiratime"))
			return 0;
		return refuse(c, word, "the daemon keeps it by how it opens the backing files",
			      true);
	}
	ufs_config_defaults(&c->word);
	if (!value && !strcmp(key, "debug")) {
		strcpy(key, "log_level");
		value = "debug";
	}
	if (ufs_config_set(&c->word, key, value, UFS_SRC_MOUNT_OPT, &err))
		return 0;	/* not a setting: the kernel's flag, or a word for mount(8) */
	return check_setting(c, word, key);
}

int ufs_running_check(const char *mountpoint, long conn, const char *super, const char *optstr)
{
	struct check *c = calloc(1, sizeof(*c));
	struct ufs_mount_opts mo = { 0 };
	struct ufs_config_error err;
	char given[LINE_MAX_LEN];
	int ret;

	if (!c) {
		fprintf(stderr, "uringfs: remount %s: out of memory\n", mountpoint);
		return 1;
	}
	c->mountpoint = mountpoint;
	c->super = super;
	c->text = running_read(mountpoint, conn);
	ufs_config_defaults(&c->given);
	if (c->text && field(c->text, "settings", given, sizeof(given)))
		ufs_mount_opts_parse(given, &c->given, &mo, &err);
	ret = ufs_mount_opts_each(optstr, check_word, c, &err);
	if (ret < 0)
		fprintf(stderr, "uringfs: %s\n", err.msg);
	free(c->text);
	free(c);
	return ret ? 1 : 0;
}

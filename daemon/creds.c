// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-request credentials for the calls that create an inode.
 *
 * Which identity a backing call needs, per operation: with allow_other the
 * kernel has already checked the caller's permission (default_permissions
 * is required, and FUSE_POSIX_ACL adds the ACLs), so most calls run with
 * the daemon's own rights.  What the caller's identity still decides is
 * what a new inode looks like: its owner, its group (a setgid directory's,
 * or the caller's fsgid), whether it keeps a setgid bit the caller may not
 * set, and, for a CREATE that finds the name taken, whether the caller may
 * open what is there.  So around mknod, mkdir, symlink, create, tmpfile
 * and a rename's whiteout (and ACCESS, which asks exactly this question)
 * the worker thread takes the caller's fsuid, fsgid and all of its
 * supplementary groups, and the backing file system decides as it would
 * for a local call.  LINK and RENAME create no inode and run as the daemon,
 * with the caller's limits (ident.c, dispatch.c).  The caller keeps
 * CAP_SYS_RESOURCE here only if it holds it (reserved blocks, quotas).
 *
 * The kernel sends no supplementary groups but, with FUSE_CREATE_SUPP_GROUP,
 * the parent directory's group when the caller is in it.  The full list is
 * read from /proc/PID/status of the calling thread (caller.c).
 *
 * A daemon not run by root (allow_other with user_allow_other) cannot take
 * anyone's identity: inodes it makes for other users are its own, so they
 * get no set-id bits (ufs_creds_mode).
 *
 * The raw system calls are used on purpose: they change only the calling
 * thread, while glibc's wrappers would change every thread of the process.
 * Changing fsuid from 0 also drops CAP_DAC_OVERRIDE, CAP_MKNOD and friends
 * for this thread, and switching back restores them.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caller.h"
#include "creds.h"
#include "fs.h"
#include "ident.h"
#include "log.h"

#define CREDS_MAX_GROUPS 65536	/* NGROUPS_MAX */

static int thread_setgroups(size_t n, const gid_t *groups)
{
	return syscall(SYS_setgroups, n, groups) ? -errno : 0;
}

/* setfsuid() reports no error: read the value back to know it took. */
static int thread_setfsuid(uid_t uid)
{
	setfsuid(uid);
	return (uid_t)setfsuid(-1) == uid ? 0 : -EPERM;
}

static int thread_setfsgid(gid_t gid)
{
	setfsgid(gid);
	return (gid_t)setfsgid(-1) == gid ? 0 : -EPERM;
}

/* Room for n groups in c->groups: the inline array, else the heap. */
static int groups_reserve(struct ufs_creds *c, size_t n)
{
	gid_t *p;

	if (n <= c->groups_cap)
		return 0;
	p = realloc(c->groups == c->inline_groups ? NULL : c->groups, 2 * n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (c->groups == c->inline_groups)
		memcpy(p, c->inline_groups, sizeof(c->inline_groups));
	c->groups = p;
	c->groups_cap = 2 * n;
	return 0;
}

static void groups_release(struct ufs_creds *c)
{
	if (c->groups != c->inline_groups)
		free(c->groups);
	c->groups = c->inline_groups;
	c->groups_cap = UFS_CREDS_INLINE_GROUPS;
}

struct groups_parse {
	struct ufs_creds *c;
	int n;
};

/* The Groups: line, into c->groups. */
static int groups_line(const char *key, const char *value, void *arg)
{
	struct groups_parse *g = arg;
	const char *p = value;
	char *end;

	if (!strcmp(key, "CapEff")) {
		g->c->caps = strtoull(value, NULL, 16);
		g->c->caps_read = true;
		return 0;	/* after Groups: done */
	}
	if (strcmp(key, "Groups"))
		return 1;
	for (;;) {
		unsigned long gid = strtoul(p, &end, 10);

		if (end == p)
			return 1;	/* CapEff comes later */
		if (g->n == CREDS_MAX_GROUPS || groups_reserve(g->c, g->n + 1))
			return -ENOMEM;
		g->c->groups[g->n++] = gid;
		p = end;
	}
}

/* The caller's supplementary groups (caller.c); the count, or a negative errno. */
static int caller_groups(const struct ufs_req *req, struct ufs_creds *c)
{
	struct groups_parse g = { .c = c };
	int ret = ufs_caller_status(req, groups_line, &g);

	return ret ? ret : g.n;
}

/* The kernel's own hint: the parent's group, if the caller is in it. */
static int extension_groups(const struct ufs_req *req, struct ufs_creds *c)
{
	uint32_t n = req->args.group_count;

	if (n > CREDS_MAX_GROUPS || groups_reserve(c, n))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t gid;

		memcpy(&gid, req->args.groups + i * sizeof(gid), sizeof(gid));
		c->groups[i] = gid;
	}
	return n;
}

/* CAP_SYS_RESOURCE of the caller: from the CapEff read with its groups, if it was. */
static bool caller_has_resource(const struct ufs_req *req, const struct ufs_creds *c)
{
	if (c->caps_read)
		return ufs_caller_sys_resource(req, c->caps);
	return req->in->uid == 0;
}

static const struct ufs_ident no_switch = { .set = false };

int ufs_creds_enter(struct ufs_fs *fs, const struct ufs_req *req, struct ufs_creds *saved)
{
	int n, ret;

	saved->switched = false;
	saved->caps_read = false;
	saved->ident.switched = false;
	saved->groups = saved->inline_groups;
	saved->groups_cap = UFS_CREDS_INLINE_GROUPS;
	/*
	 * A daemon not run by root creates every inode as its own user: for
	 * another user (allow_other), that would be a set-id file owned by
	 * someone else, which nobody can make locally.
	 */
	saved->strip_setid = !fs->running_as_root && req->in->uid != geteuid();
	if (!fs->running_as_root || (req->in->uid == 0 && req->in->gid == 0))
		return 0;
	if (req->in->uid == FUSE_INVALID_UIDGID || req->in->gid == FUSE_INVALID_UIDGID)
		return -EOVERFLOW;

	n = caller_groups(req, saved);
	if (n < 0 && n != -ENOMEM) {
		/* A caller outside our pid namespace, or gone: fewer rights, never more. */
		ufs_log_once(UFS_LOG_INFO, "the groups of pid %u cannot be read (%s): using the "
			     "kernel's group hint", req->in->pid, strerror(-n));
		n = extension_groups(req, saved);
	}
	if (n < 0) {
		groups_release(saved);
		return n;
	}

	/* Groups and gid first: once fsuid is not 0 we may lack the right to change them. */
	ret = thread_setgroups(n, saved->groups);
	groups_release(saved);
	if (ret)
		return ret;
	saved->switched = true;
	/* Not always 0: a RENAME's whiteout is made inside its caller's limits (dispatch.c). */
	saved->uid = setfsuid(-1);
	saved->gid = setfsgid(-1);
	ret = thread_setfsgid(req->in->gid);
	if (!ret)
		ret = thread_setfsuid(req->in->uid);
	/*
	 * setfsuid() kept CAP_SYS_RESOURCE, with which a new inode's blocks
	 * would come from root's reserve and past quota hard limits (ident.c):
	 * it stays only if the caller has it.
	 */
	if (!ret && !caller_has_resource(req, saved))
		ret = ufs_ident_enter(&no_switch, 1ULL << CAP_SYS_RESOURCE, &saved->ident);
	if (ret)
		ufs_creds_leave(saved);
	return ret;
}

void ufs_ident_of(struct ufs_fs *fs, const struct ufs_req *req, const struct ufs_file *file,
		  struct ufs_ident *who)
{
	struct stat st;

	*who = (struct ufs_ident){ .set = false };
	/* Not root: the daemon's own limits are all it can give anyone. */
	if (!fs->running_as_root)
		return;
	if (file) {
		/* Writeback of the page cache: no caller, the opener pays. */
		if (file->opener_known) {
			*who = file->opener;
			return;
		}
		/* Restored from a hand-over: its owner, without privileges. */
		who->uid = who->gid = 65534;
		if (file->fd >= 0 && !fstat(file->fd, &st)) {
			who->uid = st.st_uid;
			who->gid = st.st_gid;
		}
		who->set = true;
		return;
	}
	who->uid = req->in->uid;
	who->gid = req->in->gid;
	/*
	 * An id without a mapping, or none sent (idmap): fewer rights, never
	 * more.  Not the calling thread's own ids: an io-wq worker acting for
	 * a user that dropped root holds root's (t_charge).
	 */
	if (who->uid == FUSE_INVALID_UIDGID || who->gid == FUSE_INVALID_UIDGID) {
		who->uid = who->gid = 65534;
		who->set = true;
		return;
	}
	who->sys_resource = ufs_caller_has_resource(req);
	/* Root with CAP_SYS_RESOURCE is the daemon: nothing to switch. */
	who->set = who->uid || who->gid || !who->sys_resource;
}

/*
 * Is the caller in group gid (its fsgid or one of its supplementary
 * groups)?  For the setgid rules; without a readable group list, only the
 * kernel's hint counts.
 */
bool ufs_caller_in_group(const struct ufs_req *req, gid_t gid)
{
	struct ufs_creds c = { .groups = c.inline_groups, .groups_cap = UFS_CREDS_INLINE_GROUPS };
	bool found = req->in->gid == gid;
	int n;

	if (found)
		return true;
	n = caller_groups(req, &c);
	if (n < 0)
		n = extension_groups(req, &c);
	for (int i = 0; i < n && !found; i++)
		found = c.groups[i] == gid;
	groups_release(&c);
	return found;
}

mode_t ufs_creds_mode(const struct ufs_creds *c, mode_t mode)
{
	return c->strip_setid ? mode & ~(S_ISUID | S_ISGID) : mode;
}

void ufs_creds_leave(struct ufs_creds *saved)
{
	/* CAP_SYS_RESOURCE back before fsuid 0 raises the rest. */
	ufs_ident_leave(&saved->ident);
	if (!saved->switched)
		return;
	/*
	 * Failing to become root again would leave this worker serving every
	 * later request with a client's identity: stop rather than do that.
	 */
	if (thread_setfsuid(saved->uid) || thread_setfsgid(saved->gid) ||
	    thread_setgroups(0, NULL)) {
		ufs_err("cannot restore the worker's credentials: %m");
		abort();
	}
	saved->switched = false;
}

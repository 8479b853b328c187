// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Kernel passthrough (FUSE_PASSTHROUGH, Linux 6.9): whether the daemon can
 * do it, the backing ids it registers, and what a backing file is (its file
 * system, the attributes that keep it off passthrough).  Which data path an
 * open gets is io_path.c's.
 *
 * Safety rules, each keeping the mount as strict as the backing file system:
 *  - the backing id is registered with CAP_FSETID dropped: the kernel does
 *    passthrough writes with the credentials of the BACKING_OPEN caller
 *    (fs/fuse/backing.c: fb->cred = prepare_creds()), and the backing file
 *    system clears set-id bits on a write only for a writer without it;
 *  - and as the inode's first opener's identity for limits (ident.c): a
 *    later writer with other limits gets FOPEN_DIRECT_IO with it;
 *  - set-id files stay on the daemon path, where the kernel tells the daemon
 *    per write whether its caller may keep the bits (FUSE_WRITE_KILL_SUIDGID);
 *    a set-uid bit, or a set-gid bit with group execute, set while the file
 *    is passed through is cleared by any write, root's included (stricter
 *    than natively, never looser); a set-gid bit without group execute
 *    (which exec ignores) stays when the daemon is in the file's group;
 *  - never on a suid mount (io_path.c: ufs_io_path_start);
 *  - append-only and immutable files stay on the daemon path: a passthrough
 *    mmap reaches the backing file without the VFS's IS_APPEND check
 *    (mm/mmap.c checks the FUSE inode, which has no such flag); their
 *    writers get FOPEN_DIRECT_IO there (io_path.c: append_only_writer);
 *  - files of pseudo file systems (proc, sysfs, ...) are never passed
 *    through: their files need not behave like regular files.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "fuse_abi.h"
#include "ident.h"
#include "lockdep.h"
#include "log.h"
#include "passthrough.h"

static const char *const state_names[] = {
	[UFS_PT_OFF] = "off",
	[UFS_PT_ON] = "on",
	[UFS_PT_EPERM] = "eperm",
};

static const char *const refusal_names[] = {
	[UFS_PT_REFUSED_EPERM] = "eperm",
	[UFS_PT_REFUSED_ELOOP] = "eloop",
	[UFS_PT_REFUSED_MIXED] = "mixed",
	[UFS_PT_REFUSED_ATTR] = "attr",
	[UFS_PT_REFUSED_SETID] = "setid",
	[UFS_PT_REFUSED_PSEUDO] = "pseudo",
	[UFS_PT_REFUSED_OTHER] = "other",
};

const char *ufs_passthrough_state_name(enum ufs_passthrough_state state)
{
	return state_names[state];
}

const char *ufs_pt_refusal_name(enum ufs_pt_refusal why)
{
	return refusal_names[why];
}

void ufs_passthrough_init(struct ufs_passthrough *pt)
{
	pt->state = UFS_PT_OFF;
	pt->dev_fd = -1;
	pt->backing_ids = 0;
}

/* The only transition after start: ON -> EPERM, when the capability went. */
void ufs_passthrough_lost_capability(struct ufs_passthrough *pt)
{
	enum ufs_passthrough_state on = UFS_PT_ON;

	if (__atomic_compare_exchange_n(&pt->state, &on, UFS_PT_EPERM, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		ufs_warn("passthrough: BACKING_OPEN refused (EPERM): files are served by the "
			 "daemon");
}

enum ufs_passthrough_state ufs_passthrough_probe(struct ufs_passthrough *pt, int dir_fd,
						 const char **why)
{
	/* A directory passes the capability check and fails after it (EISDIR). */
	struct fuse_backing_map map = { .fd = dir_fd };
	int ret;

	ret = ioctl(pt->dev_fd, FUSE_DEV_IOC_BACKING_OPEN, &map);
	if (ret >= 0) {
		/* Cannot happen for a directory; do not leak the id if it did. */
		ioctl(pt->dev_fd, FUSE_DEV_IOC_BACKING_CLOSE, &ret);
	} else if (errno == EPERM) {
		*why = "BACKING_OPEN needs CAP_SYS_ADMIN, which the daemon lacks";
		pt->state = UFS_PT_EPERM;
		return UFS_PT_EPERM;
	}
	*why = NULL;
	pt->state = UFS_PT_ON;
	return UFS_PT_ON;
}

/*
 * BACKING_OPEN of fd as who: the new id, or -errno.  The kernel keeps the
 * caller's credentials for every passthrough write (fb->cred), so they are
 * the first opener's limits (ident.c), with CAP_FSETID dropped.
 */
int ufs_backing_open(struct ufs_passthrough *pt, int fd, const struct ufs_ident *who)
{
	struct fuse_backing_map map = { .fd = fd };
	struct ufs_ident_saved saved;
	int id, err;

	err = ufs_ident_enter(who, 1ULL << CAP_FSETID, &saved);
	if (err)
		return err;
	id = ioctl(pt->dev_fd, FUSE_DEV_IOC_BACKING_OPEN, &map);
	err = errno;
	ufs_ident_leave(&saved);
	if (id < 0)
		return -err;
	__atomic_fetch_add(&pt->backing_ids, 1, __ATOMIC_RELAXED);
	return id;
}

void ufs_backing_close(struct ufs_passthrough *pt, int id)
{
	uint32_t arg = id;

	if (pt->dev_fd < 0)
		return;
	if (ioctl(pt->dev_fd, FUSE_DEV_IOC_BACKING_CLOSE, &arg))
		ufs_log_once(UFS_LOG_WARN, "passthrough: BACKING_CLOSE of id %d: %m", id);
	__atomic_fetch_sub(&pt->backing_ids, 1, __ATOMIC_RELAXED);
}

/* Backing files whose reads and writes are not those of a regular file. */
static bool pseudo_fs(unsigned long type)
{
	static const unsigned long magic[] = {
		PROC_SUPER_MAGIC,
		SYSFS_MAGIC,
		DEBUGFS_MAGIC,
		TRACEFS_MAGIC,
		SECURITYFS_MAGIC,
		CGROUP_SUPER_MAGIC,
		CGROUP2_SUPER_MAGIC,
		BPF_FS_MAGIC,
		EFIVARFS_MAGIC,
		PSTOREFS_MAGIC,
		DEVPTS_SUPER_MAGIC,
		SELINUX_MAGIC,
		SMACK_MAGIC,
		0x19800202 /* mqueue */,
		0x62656570 /* configfs */,
		0x65735543 /* fusectl */,
	};

	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if (type == magic[i])
			return true;
	return false;
}

/*
 * Local file systems, where nothing happens at close(2) that the last
 * release does not do as well: their opens need no FLUSH.  On NFS a close
 * writes back and reports errors (close-to-open), so FLUSH stays.
 */
static bool local_fs(unsigned long type)
{
	static const unsigned long magic[] = {
		EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC,  BTRFS_SUPER_MAGIC,
		TMPFS_MAGIC,	  F2FS_SUPER_MAGIC, RAMFS_MAGIC,
	};

	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if (type == magic[i])
			return true;
	return false;
}

/* The backing file system of fd, by its magic; UFS_BACKING_UNKNOWN if fstatfs fails. */
enum ufs_backing_fs ufs_backing_fs_of(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs))
		return UFS_BACKING_UNKNOWN;
	return pseudo_fs(sfs.f_type)  ? UFS_BACKING_PSEUDO
	       : local_fs(sfs.f_type) ? UFS_BACKING_LOCAL
				      : UFS_BACKING_OTHER;
}

/* What keeps fd off passthrough, or UFS_PT_REFUSED_COUNT for nothing. */
enum ufs_pt_refusal ufs_backing_refusal(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MODE, &stx))
		return UFS_PT_REFUSED_OTHER; /* unknown: the cautious answer */
	if (stx.stx_attributes & (STATX_ATTR_APPEND | STATX_ATTR_IMMUTABLE))
		return UFS_PT_REFUSED_ATTR;
	if (stx.stx_mode & (S_ISUID | S_ISGID))
		return UFS_PT_REFUSED_SETID;
	return UFS_PT_REFUSED_COUNT;
}

/* A backing id the kernel still holds from a predecessor, counted as registered. */
void ufs_backing_adopted(struct ufs_passthrough *pt)
{
	__atomic_fetch_add(&pt->backing_ids, 1, __ATOMIC_RELAXED);
}

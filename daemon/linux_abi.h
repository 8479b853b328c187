/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Linux ABI outside FUSE and io_uring (fuse_abi.h) that Debian 12's
 * headers (Linux 6.1 uapi) predate.  Each item is guarded so that a newer
 * system header wins, and the layouts are pinned by _Static_assert against
 * include/uapi.
 */
#ifndef UFS_LINUX_ABI_H
#define UFS_LINUX_ABI_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>

/* fanotify (Linux 6.5): report the object's own fid; its handle for that */
#ifndef FAN_REPORT_TARGET_FID
#define FAN_REPORT_TARGET_FID 0x00001000
#endif
#ifndef AT_HANDLE_FID
#define AT_HANDLE_FID 0x200
#endif

/* pidfd_open(2) of a thread, not a process (Linux 6.9) */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/*
 * PIDFD_GET_INFO (Linux 6.13): a task's own credentials.  The first
 * version of struct pidfd_info (PIDFD_INFO_SIZE_VER0, 64 bytes), under our
 * name: the ioctl's number encodes the size, and the kernel answers any
 * version it knows.
 */
struct ufs_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid;
	uint32_t ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	uint32_t spare0;
};
#define UFS_PIDFD_INFO_PID (1ULL << 0)
#define UFS_PIDFD_INFO_CREDS (1ULL << 1)
#define UFS_PIDFD_GET_INFO _IOWR(0xFF, 11, struct ufs_pidfd_info)

_Static_assert(sizeof(struct ufs_pidfd_info) == 64, "pidfd_info, PIDFD_INFO_SIZE_VER0");
_Static_assert(__builtin_offsetof(struct ufs_pidfd_info, fsuid) == 52, "pidfd_info.fsuid");
_Static_assert(PIDFD_THREAD == 0200, "PIDFD_THREAD is O_EXCL");

#endif /* UFS_LINUX_ABI_H */

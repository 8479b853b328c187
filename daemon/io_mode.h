/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data path of an inode's opens and its backing file system's kind,
 * kept in the inode (inode.h) and chosen by passthrough.c.  Types only:
 * the inode store needs them without depending on passthrough.c.
 */
#ifndef UFS_IO_MODE_H
#define UFS_IO_MODE_H

/* The data path an inode's opens take (inode->io_mode, file->io_mode). */
enum ufs_io_mode {
	UFS_IO_NONE, /* no open counted */
	UFS_IO_DAEMON, /* READ/WRITE come to the daemon: copy or zero copy */
	UFS_IO_PASSTHROUGH, /* the kernel does them on inode->backing_id */
};

/* What an inode's backing file system is (inode->backing_fs). */
enum ufs_backing_fs {
	UFS_BACKING_UNKNOWN, /* not opened yet */
	UFS_BACKING_LOCAL, /* ext4, xfs, btrfs, tmpfs...: close(2) does nothing there */
	UFS_BACKING_OTHER, /* NFS and the rest: FLUSH is kept */
	UFS_BACKING_PSEUDO, /* proc, sysfs...: never passed through */
};

#endif /* UFS_IO_MODE_H */

// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The passthrough file system's state: SOURCE, the inode store, the file
 * table and the control file, opened and closed together.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "file_table.h"
#include "fs.h"
#include "inode_prune.h"
#include "fs_control.h"
#include "fs_file.h"
#include "fs_lock.h"
#include "fs_setup.h"

/* The descriptor limit the budget shares out (raised to the hard limit by then). */
static unsigned long nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 1UL << 20;
	return rl.rlim_cur;
}

/*
 * Opens SOURCE and the inode store.  Returns 0 or a negative errno; on
 * failure nothing needs undoing.
 */
int ufs_fs_init(struct ufs_fs *fs, const struct ufs_config *cfg, const char *source)
{
	int proc_fd, root_fd;
	struct stat st;
	int ret;

	memset(fs, 0, sizeof(*fs));
	ufs_coherence_init(&fs->coherence);
	ufs_passthrough_init(&fs->pt);
	fs->cfg = cfg;
	fs->running_as_root = geteuid() == 0;

	proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	root_fd = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		ret = -errno;
		goto err_close_proc;
	}
	if (fstatat(root_fd, "", &st, AT_EMPTY_PATH) < 0) {
		ret = -errno;
		goto err_close_root;
	}
	ret = ufs_confine_init(&fs->confine, root_fd, proc_fd, st.st_dev, st.st_ino);
	if (ret)
		goto err_close_root;
	ret = ufs_inode_store_init(&fs->inodes, cfg, &fs->confine, ufs_lock_release_all);
	if (ret)
		goto err_close_root;
	ret = ufs_fs_files_init(fs);
	if (ret)
		goto err_inodes;
	/* From here the root inode owns root_fd. */
	ret = ufs_inode_root_create(&fs->inodes, root_fd, &st);
	if (ret)
		goto err_files;
	ret = ufs_inode_handles_probe(&fs->inodes.handles);
	if (!ret)
		ret = ufs_control_init(fs);
	/* Whether names and attributes can be cached until they change (coherence.c). */
	if (!ret)
		ret = ufs_coherence_open(&fs->coherence, cfg, &fs->inodes, root_fd, st.st_dev);
	if (ret) {
		ufs_file_table_destroy(&fs->files);
		ufs_inode_store_destroy(&fs->inodes);	/* closes root_fd with the root inode */
		close(proc_fd);
		return ret;
	}
	ufs_confine_memo_start(&fs->confine);
	ufs_budget_init(&fs->budget, cfg->open_fds_per_user, nofile_limit());
	ufs_interrupts_init(&fs->interrupts);
	ufs_waits_init(&fs->waits, &fs->interrupts);
	ufs_copies_init(&fs->copies, &fs->interrupts);
	return 0;

err_files:
	ufs_file_table_destroy(&fs->files);
err_inodes:
	ufs_inode_store_destroy(&fs->inodes);
err_close_root:
	close(root_fd);
err_close_proc:
	close(proc_fd);
	return ret;
}

/*
 * /proc/self/fd names the opening process's descriptors: after the daemon
 * detaches (fork), the parent's directory is the wrong one.  Reopen it in
 * the process that serves.
 */
int ufs_fs_reopen_proc(struct ufs_fs *fs)
{
	int fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fs->confine.proc_fd);
	fs->confine.proc_fd = fd;
	return 0;
}

/* Node records (the inode store, the export records) and file records alike. */
void ufs_fs_set_record(struct ufs_fs *fs, struct ufs_record *record)
{
	fs->record = record;
	ufs_inode_set_record(&fs->inodes, record);
}

void ufs_fs_destroy(struct ufs_fs *fs)
{
	/*
	 * The connection is gone, and its backing ids with it: no BACKING_CLOSE
	 * from a copy or a wait that ends now (its descriptor number may be
	 * another file's already).
	 */
	fs->pt.dev_fd = -1;
	ufs_coherence_stop(&fs->coherence);
	ufs_inode_prune_stop(&fs->prune);
	ufs_copies_destroy(&fs->copies);
	ufs_waits_destroy(&fs->waits);
	ufs_interrupts_destroy(&fs->interrupts);
	ufs_file_table_destroy(&fs->files);
	ufs_inode_store_destroy(&fs->inodes);
	ufs_confine_destroy(&fs->confine);
	close(fs->confine.proc_fd);
	ufs_budget_destroy(&fs->budget);
	ufs_control_opens_destroy(&fs->control_opens);
}


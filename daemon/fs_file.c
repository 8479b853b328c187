// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The file system's side of an open file, beside its table (file_table.c):
 * its hand-over record, the inode descriptor it pins and who pays for it,
 * and freeing it.
 */
#include <stdlib.h>
#include <unistd.h>

#include "file_table.h"
#include "fs.h"
#include "fs_file.h"
#include "io_path.h"

/* The hand-over record of an open file: enough to open it again (record.h). */
static void record_file(void *arg, uint32_t index, uint32_t gen, const struct ufs_file *file)
{
	struct ufs_fs *fs = arg;
	enum ufs_record_file_kind kind = file->inode->control ? UFS_RECORD_CONTROL :
					 file->is_dir ? UFS_RECORD_DIR : UFS_RECORD_FILE;
	int backing_id = file->io_mode == UFS_IO_PASSTHROUGH ? file->inode->backing_id : 0;

	ufs_record_file_set(fs->record, index, gen, file->inode->nodeid, file->flags, kind,
			    file->io_mode, backing_id, file->uid + 1);
}

/*
 * An open file pins its inode's O_PATH descriptor (inode.c: a handle-backed
 * inode in use keeps it): one descriptor for all opens of the inode, charged
 * to one of them (budget.h).  When that one is released and others remain,
 * the charge moves to one of those: the descriptor stays for them.  prepaid:
 * the caller charged file->uid for the pin already (taken back if another
 * open pays).  Without file handles every inode the kernel knows holds its
 * descriptor anyway, and no open is charged for it.
 */
void ufs_file_pin(struct ufs_fs *fs, struct ufs_file *file, bool prepaid)
{
	struct ufs_inode *inode = file->inode;
	bool pays = false;

	if (!fs->inodes.handles.usable || inode->control) {
		if (prepaid)
			ufs_budget_uncharge(&fs->budget, file->uid, 1);
		return;
	}
	pthread_mutex_lock(&inode->lock);
	file->pin_next = inode->opens;
	inode->opens = file;
	file->pin_linked = true;
	if (!inode->pin_payer) {
		inode->pin_payer = file;
		pays = true;
	}
	pthread_mutex_unlock(&inode->lock);
	if (pays && !prepaid)
		ufs_budget_force(&fs->budget, file->uid, 1);
	else if (!pays && prepaid)
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
}

static void file_unpin(struct ufs_fs *fs, struct ufs_file *file)
{
	struct ufs_inode *inode = file->inode;
	struct ufs_file **pp, *heir = NULL;
	bool paid;

	if (!file->pin_linked)
		return;
	pthread_mutex_lock(&inode->lock);
	for (pp = &inode->opens; *pp && *pp != file; pp = &(*pp)->pin_next)
		;
	if (*pp)
		*pp = file->pin_next;
	paid = inode->pin_payer == file;
	if (paid)
		heir = inode->pin_payer = inode->opens;
	/* The heir is still linked, so still open: its uid is stable. */
	if (heir)
		ufs_budget_force(&fs->budget, heir->uid, 1);
	pthread_mutex_unlock(&inode->lock);
	file->pin_linked = false;
	if (paid)
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
}

/* Closes the descriptor and drops the file's inode reference. */
void ufs_file_free(struct ufs_fs *fs, struct ufs_file *file)
{
	file_unpin(fs, file);
	ufs_io_path_release(fs, file);
	if (file->fd >= 0)
		close(file->fd);
	if (file->charged)
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
	if (file->control_counted)
		ufs_control_opens_drop(&fs->control_opens, file->uid);
	free(file->dir_buf);
	free(file->control_text);
	pthread_mutex_destroy(&file->dir_lock);
	ufs_inode_put(&fs->inodes, file->inode);
	free(file);
}

static void unrecord_file(void *arg, uint32_t index)
{
	struct ufs_fs *fs = arg;

	ufs_record_file_drop(fs->record, index);
}

static void free_file(void *arg, struct ufs_file *file)
{
	ufs_file_free(arg, file);
}

static const struct ufs_file_table_ops file_ops = {
	.record = record_file,
	.unrecord = unrecord_file,
	.free = free_file,
};

int ufs_fs_files_init(struct ufs_fs *fs)
{
	return ufs_file_table_init(&fs->files, &file_ops, fs);
}

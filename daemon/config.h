/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Settings.  One table (config.c) describes every key: its section in the
 * ini file, type, range and default.  The same key is accepted in the file,
 * as a -o mount option and, for a few, as a command-line switch.  Precedence:
 * command line, then -o, then the file, then the built-in default.
 */
#ifndef UFS_CONFIG_H
#define UFS_CONFIG_H

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define UFS_DEFAULT_CONFIG SYSCONFDIR "/uringfs/uringfs.conf"

enum ufs_switch {
	UFS_SWITCH_AUTO,
	UFS_SWITCH_ON,
	UFS_SWITCH_OFF,
};

enum ufs_cfr_mode {
	UFS_CFR_AUTO,
	UFS_CFR_RING,
	UFS_CFR_THREAD,
	UFS_CFR_SYNC,
};

/* The data path opens ask the kernel for (io_path). */
enum ufs_io_path {
	UFS_IO_PATH_AUTO,		/* zero copy where the kernel has it, else passthrough */
	UFS_IO_PATH_PASSTHROUGH,	/* the kernel does the I/O on the backing file */
	UFS_IO_PATH_ZERO_COPY,		/* FOPEN_IO_URING_ZERO_COPY on every open */
	UFS_IO_PATH_COPY,		/* the daemon copies every byte */
};

enum ufs_readdirplus {
	UFS_RDP_OFF,
	UFS_RDP_ON,
	UFS_RDP_AUTO,
};

enum ufs_cache_readdir {
	UFS_RDC_OFF,
	UFS_RDC_ON,
	UFS_RDC_AUTO,	/* on when entry_timeout and attr_timeout are long */
};

enum ufs_xattr_policy {
	UFS_XATTR_ALLOW,
	UFS_XATTR_DENY,
};

/* How long the kernel caches names and attributes (cache): coherence.h. */
enum ufs_cache_policy {
	UFS_CACHE_AUTO,		/* coherent where it can be had, else timeout */
	UFS_CACHE_COHERENT,	/* coherent, or no start */
	UFS_CACHE_TIMEOUT,	/* the timeouts below (entry/attr 1 s, negative 0) */
	UFS_CACHE_NONE,		/* every timeout 0 unless set */
};

enum ufs_inode_handles {
	UFS_HANDLES_NEVER,
	UFS_HANDLES_PREFER,
	UFS_HANDLES_MANDATORY,
};

/* Where the effective value of a key came from (--print-config). */
enum ufs_source {
	UFS_SRC_DEFAULT,
	UFS_SRC_FILE,
	UFS_SRC_MOUNT_OPT,
	UFS_SRC_CMDLINE,
};

#define UFS_CPUS_MAX 1024

struct ufs_config {
	/* [general] */
	int log_level;			/* enum ufs_log_level */
	char stats_file[NAME_MAX + 1];	/* control file name at the root, "" = off */
	bool handover;			/* keep the hand-over record; accept take-overs */
	unsigned int slow_request_ms;	/* log requests in flight longer (slow.c), 0: off */

	/* [workers] */
	unsigned int workers;		/* 0: one per online CPU */
	char cpus[256];			/* CPU list text, "" = no pinning */
	cpu_set_t cpu_set;		/* parsed cpus */
	unsigned int cpu_count;
	bool pin_queues;		/* io_uring workers run on their queues' CPUs */
	unsigned int queue_depth;
	int io_uring;			/* enum ufs_switch */
	int zero_copy;			/* enum ufs_switch */
	unsigned int bufpool_buffers;	/* per queue; 0: queue_depth */
	int copy_file_range;		/* enum ufs_cfr_mode */
	int io_path;			/* enum ufs_io_path */

	/* [fuse] */
	unsigned int max_write;
	int cache;			/* enum ufs_cache_policy */
	double attr_timeout;
	double entry_timeout;
	double negative_timeout;
	unsigned int request_timeout;	/* seconds, 0: none */
	bool writeback_cache;
	bool keep_cache;
	bool allow_other;
	bool default_permissions;
	bool posix_acl;
	bool idmap;			/* FUSE_ALLOW_IDMAP: the mount may be idmapped */
	bool posix_locks;
	bool flock_locks;
	int readdirplus;		/* enum ufs_readdirplus */
	int cache_readdir;		/* enum ufs_cache_readdir */
	bool killpriv_v2;
	bool export_support;
	unsigned int export_inodes;	/* forgotten node ids kept for file handles */
	unsigned int inode_limit;	/* inodes the kernel may make us keep, 0: unbounded */
	char export_store[PATH_MAX];	/* DIR keeping them across daemons, "" = off (store.c) */
	bool cache_symlinks;
	bool parallel_dirops;
	bool async_read;

	/* [backing] */
	bool xattr;
	int xattr_trusted;		/* enum ufs_xattr_policy */
	int xattr_security;		/* enum ufs_xattr_policy */
	bool backing_direct_io;
	int inode_handles;		/* enum ufs_inode_handles */
	unsigned int fd_cache;		/* descriptors kept for handle-backed inodes */
	unsigned int open_fds_per_user;	/* descriptors one user's opens may hold, 0: auto */

	/* Not settings: bookkeeping. */
	char config_path[PATH_MAX];
	bool config_path_explicit;
	unsigned char source[64];	/* enum ufs_source per table index */
};

struct ufs_config_error {
	char msg[512];
};

void ufs_config_defaults(struct ufs_config *cfg);

/*
 * Set one key.  Returns 0, -ENOENT for an unknown key, or -EINVAL for a bad
 * value; err then holds "what is wrong" without a location prefix.
 */
int ufs_config_set(struct ufs_config *cfg, const char *key, const char *value,
		   enum ufs_source src, struct ufs_config_error *err);

void ufs_config_print(const struct ufs_config *cfg, FILE *out);
/* key's value as --print-config shows it, into buf: 0, -ENOENT (no such key) or -EIO. */
int ufs_config_format(const struct ufs_config *cfg, const char *key, char *buf, size_t len);

/* Name of the key at table index i, or NULL past the end (docs tests). */
const char *ufs_config_key_at(size_t i);
/* Sets err->msg (err may be NULL). */
void ufs_config_error_set(struct ufs_config_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The section key belongs in, or NULL for an unknown key. */
const char *ufs_config_key_section(const char *key);
bool ufs_config_section_known(const char *section);

int ufs_parse_cpulist(const char *text, cpu_set_t *set, unsigned int *count);
const char *ufs_switch_name(int value);
const char *ufs_cfr_mode_name(int value);
const char *ufs_io_path_name(int value);
const char *ufs_cache_policy_name(int value);
/* Was key set (file, -o or command line), rather than left at its default? */
bool ufs_config_is_set(const struct ufs_config *cfg, const char *key);

#endif /* UFS_CONFIG_H */

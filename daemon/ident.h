/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Whose limits a backing call meets (ident.c): the identity a worker thread
 * takes around a call that consumes space on behalf of a client.
 */
#ifndef UFS_IDENT_H
#define UFS_IDENT_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A client as the backing file system's limits see it: the fsuid that
 * ext4's reserved blocks compare with s_resuid, the fsgid (s_resgid), and
 * whether CAP_SYS_RESOURCE (reserved blocks, quota hard limits) counts.
 */
struct ufs_ident {
	uint32_t uid, gid;
	bool sys_resource;
	bool set;		/* false: run as the daemon (its own limits) */
};

struct ufs_ident_saved {
	bool switched;
	bool fsuid_changed;
	uint32_t effective[2];	/* the thread's effective capabilities before */
	uint32_t permitted[2];
	uint32_t inheritable[2];
};

/* Two identities whose limits are the same. */
bool ufs_ident_equal(const struct ufs_ident *a, const struct ufs_ident *b);

/*
 * Take who's limits on the calling thread (nothing if !who->set), and
 * drop the capabilities in drop (a mask of CAP_* bits) from its effective
 * set too.  The thread keeps its other capabilities, so what it may do is
 * decided as before; only who pays.  Returns 0 or -errno (nothing changed).
 */
int ufs_ident_enter(const struct ufs_ident *who, uint64_t drop, struct ufs_ident_saved *saved);
/* Back to the daemon's own identity; aborts if it cannot (see creds.c). */
void ufs_ident_leave(struct ufs_ident_saved *saved);

#endif /* UFS_IDENT_H */

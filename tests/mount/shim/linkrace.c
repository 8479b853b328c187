// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for t_stress: a local process links a file at the worst
 * moment, deterministically.  Just before the daemon's unlinkat() of a name
 * starting with "race-", or its renameat2() onto such a name, the shim
 * hard-links that name to NAME.linked, as another program using the backing
 * directory could at any time.  A daemon that decided "last link" from a
 * check made before the call then treats a file that still has a name as
 * gone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void link_first(int dirfd, const char *name)
{
	char linked[512];
	const char *base = strrchr(name, '/');

	base = base ? base + 1 : name;
	if (strncmp(base, "race-", 5) || snprintf(linked, sizeof(linked), "%s.linked", name) >=
						   (int)sizeof(linked))
		return;
	linkat(dirfd, name, dirfd, linked, 0);	/* may fail: no such name */
}

int unlinkat(int dirfd, const char *name, int flags)
{
	int (*real)(int, const char *, int) = dlsym(RTLD_NEXT, "unlinkat");

	if (!(flags & AT_REMOVEDIR))
		link_first(dirfd, name);
	return real(dirfd, name, flags);
}

int renameat2(int olddirfd, const char *oldname, int newdirfd, const char *newname,
	      unsigned int flags)
{
	int (*real)(int, const char *, int, const char *, unsigned int) =
		dlsym(RTLD_NEXT, "renameat2");

	link_first(newdirfd, newname);
	return real(olddirfd, oldname, newdirfd, newname, flags);
}

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The generated systemd unit passes systemd-analyze verify without a word,
# and mounts in the host's mount namespace.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
t_need_daemon

unit=$builddir/systemd/uringfs@.service
[[ -f $unit ]] || t_skip_all "$unit is not generated (make all)"
command -v systemd-analyze >/dev/null || t_skip_all "systemd-analyze is not installed"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# An instance, with ExecStart= on the built daemon (the installed path may
# not exist yet) and the man pages where man(1) finds them.
sed -e "s|^ExecStart=[^ ]*/uringfs |ExecStart=$daemon |" \
	-e "s|^ExecReload=[^ ]*/uringfs |ExecReload=$daemon |" "$unit" >"$tmp/uringfs@mnt-ops.service"
mkdir -p "$tmp/man/man8" "$tmp/man/man5"
ln -s "$srcdir/man/uringfs.8" "$tmp/man/man8/"
ln -s "$srcdir/man/uringfs.conf.5" "$tmp/man/man5/"
man_check=yes
command -v man >/dev/null || man_check=no

verify() {
	local out status=0
	out=$(cd "$tmp" && MANPATH=$tmp/man systemd-analyze verify --man="$man_check" \
		"$tmp/uringfs@mnt-ops.service" 2>&1) || status=$?
	[[ -n $out ]] && t_diag <<<"$out"
	[[ $status == 0 && -z $out ]]
}
t_check "systemd-analyze verify uringfs@mnt-ops.service" verify

t_check "Type=notify, running the daemon in the foreground" \
	grep -qx 'Type=notify' "$unit"
t_check "ExecStart= runs the installed daemon with -f" \
	grep -Eq '^ExecStart=/[^ ]*/uringfs -f ' "$unit"
# Upgrading without unmounting (uringfs(8), UPGRADING): the store, and a
# reload that takes the mount over with the same source and options.
t_check "FileDescriptorStoreMax= holds the connection and its record" \
	grep -Eq '^FileDescriptorStoreMax=[1-9][0-9]*$' "$unit"
# shellcheck disable=SC2016  # the unit's own $OPTIONS, literally
t_check "ExecReload= is a take-over with ExecStart='s source and options" \
	grep -Eq '^ExecReload=/[^ ]*/uringfs --take-over \$OPTIONS \$\{SOURCE\} %f$' "$unit"
t_check "NotifyAccess=all: the reload's successor may name itself MAINPID" \
	grep -qx 'NotifyAccess=all' "$unit"

# Each of these makes systemd give the service its own mount namespace,
# where the FUSE mount would be invisible to everyone else.
no_private_mounts() {
	! grep -En '^(ProtectSystem|ProtectHome|PrivateTmp|PrivateDevices|PrivateMounts|PrivateNetwork|PrivateIPC|ReadWritePaths|ReadOnlyPaths|InaccessiblePaths|ExecPaths|NoExecPaths|BindPaths|BindReadOnlyPaths|TemporaryFileSystem|ProtectKernelTunables|ProtectKernelModules|ProtectKernelLogs|ProtectControlGroups|ProtectProc|ProcSubset|MountFlags|RootDirectory|RootImage|NetworkNamespacePath|IPCNamespacePath|LogNamespace)=' "$unit" | t_diag
}
t_check "no setting gives the service a mount namespace of its own" no_private_mounts

t_done

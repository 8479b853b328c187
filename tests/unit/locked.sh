#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Every function in daemon/*.c whose name ends in _locked asserts its lock
# first (daemon/lockdep.h; locked.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/locked.py" "$@"

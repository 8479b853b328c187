#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon's layers (docs/architecture.md) against the calls its objects
# make: none upward, no circles (layers.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/layers.py" "$@"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite on a bind mount instead of the daemon: checks the tests.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

exec /usr/bin/python3 "$here/run.py" --variant bind

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make check's part of the fuzzing: build the harnesses with clang (or skip),
# then per harness the regressions, the corpus and 30 s of fuzzing, as TAP.
set -euo pipefail
exec bash "$(cd "$(dirname "$0")" && pwd)/fuzz.sh" check

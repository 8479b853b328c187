#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite against the ASan+UBSan daemon over /dev/fuse (asan.sh
# covers io_uring): memory errors can hide on either transport's paths.
exec bash "$(dirname "$0")/asan.sh" dev

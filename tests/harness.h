/* SPDX-License-Identifier: MIT */
/* The harness moved to tests/common/harness.h. */
#include "common/harness.h"

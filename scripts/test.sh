#!/usr/bin/env bash
# The test command (README, second command; .ci/run calls it): installs what assay needs,
# builds with -Werror, runs the Check suites, then the parser's suite (with its mutation
# test over the examples) under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -j"$(nproc)" WERROR=1 check
make -j"$(nproc)" WERROR=1 san-parser

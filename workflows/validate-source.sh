#!/usr/bin/env bash
# Refuse a rollout of anything but one reviewed commit.
#   SOURCE_SHA   must be a full 40-character lowercase commit SHA (no branch, tag or short id).
#   SOURCE_DIR   optional: a checkout of SOURCE_SHA; then HEAD must be that commit and the commit must be on
#                origin/$REVIEWED_BRANCH (default main), i.e. merged through review.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

require_env SOURCE_SHA
check_sha "$SOURCE_SHA"

if [[ -n "${SOURCE_DIR:-}" ]]; then
  head=$(query "$SOURCE_SHA" git -C "$SOURCE_DIR" rev-parse HEAD)
  [[ "$head" == "$SOURCE_SHA" ]] || die "checkout in $SOURCE_DIR is at $head, not $SOURCE_SHA"
  branch="origin/${REVIEWED_BRANCH:-main}"
  run git -C "$SOURCE_DIR" merge-base --is-ancestor "$SOURCE_SHA" "$branch" ||
    die "$SOURCE_SHA is not on $branch: only merged (reviewed) commits are deployed"
fi
log "source_sha $SOURCE_SHA accepted"

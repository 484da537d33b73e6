# shellcheck shell=bash
# Helpers shared by the deploy scripts in workflows/. Source it; do not run it.
#
# DRY_RUN=1 makes every script print the commands that talk to Google Cloud, git or the network instead of running
# them, one per line, to DRY_RUN_LOG (default: stderr). A command whose output the script needs (query) then yields
# a canned answer, so a dry run walks the whole path; DRY_RUN_* variables replace some answers to walk the failure
# paths (see workflows/test-dry-run.sh). Nothing is run in a dry run except local bookkeeping.

log() { printf '%s\n' "$*" >&2; }
die() {
  printf '::error::%s\n' "$*" >&2
  exit 1
}

dry_run() { [[ "${DRY_RUN:-0}" == 1 ]]; }

# Quote an argument for display only when it needs it, so dry-run listings stay readable and can be pasted.
_quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

print_cmd() {
  local line="" arg
  for arg in "$@"; do line+="$(_quote "$arg") "; done
  printf '%s\n' "${line% }" >>"${DRY_RUN_LOG:-/dev/stderr}"
}

# run CMD...: a command that changes something. Dry run: print it.
run() {
  if dry_run; then print_cmd "$@"; else "$@"; fi
}

# query CANNED CMD...: a command run for its output. Dry run: print it and output CANNED instead.
query() {
  local canned=$1
  shift
  if dry_run; then
    print_cmd "$@"
    printf '%s\n' "$canned"
  else
    "$@"
  fi
}

pause() { dry_run || sleep "$1"; }

now() { if dry_run; then printf '%s\n' "${DRY_RUN_NOW:-1800000000}"; else date +%s; fi; }

require_env() {
  local name
  for name in "$@"; do [[ -n "${!name:-}" ]] || die "$name is not set"; done
}

# A deploy names exactly one commit: a full, lowercase, 40-hex SHA-1. Branch names, tags, short or upper-case ids
# are refused, so what was reviewed is what runs.
check_sha() {
  [[ "$1" =~ ^[0-9a-f]{40}$ ]] || die "source_sha must be a full 40-character lowercase commit SHA, got '$1'"
}

# The functions, one per line: <key> <EntryPoint> <public|private>. Same list as infra/functions.tf.
functions_list() { grep -v '^#' "$(dirname "${BASH_SOURCE[0]}")/functions.tsv"; }

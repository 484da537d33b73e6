#!/usr/bin/env bash
# lease.sh acquire | release
#
# An expiring lease held as one Cloud Storage object, so that two rollouts never run their schema step at once.
#   acquire  creates gs://$LEASE_BUCKET/leases/$LEASE_NAME only if it does not exist (generation precondition 0).
#            If it exists and its expiry has passed (a run that died without releasing), it is taken over with a
#            precondition on the generation just read, so of two runs taking over at once exactly one wins.
#            Otherwise it waits, up to LEASE_WAIT_SECONDS. Prints generation=<n> (also to $GITHUB_OUTPUT).
#   release  deletes the object only if it is still the generation this run created (LEASE_GENERATION), so a run
#            that outlived its lease never deletes its successor's.
# Env: LEASE_BUCKET, LEASE_NAME, LEASE_TTL_SECONDS (1800), LEASE_WAIT_SECONDS (900), LEASE_HOLDER (run id),
#      LEASE_GENERATION (release only).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

require_env LEASE_BUCKET LEASE_NAME
object="gs://$LEASE_BUCKET/leases/$LEASE_NAME"
ttl=${LEASE_TTL_SECONDS:-1800}
wait_for=${LEASE_WAIT_SECONDS:-900}
holder=${LEASE_HOLDER:-${GITHUB_REPOSITORY:-local}/${GITHUB_RUN_ID:-0}/${GITHUB_RUN_ATTEMPT:-0}}

# write_lease PRECONDITION: try to (re)create the lease object; succeeds only if the precondition holds.
write_lease() {
  run gcloud storage cp - "$object" --if-generation-match="$1" --content-type=text/plain \
    <<<"$(printf 'holder=%s\nexpires=%s' "$holder" "$(($(now) + ttl))")"
}

acquire() {
  local deadline=$(($(now) + wait_for)) generation current expires
  while true; do
    if write_lease 0; then
      break
    fi
    generation=$(query "" gcloud storage objects describe "$object" --format='value(generation)' 2>/dev/null || true)
    if [[ -z "$generation" ]]; then
      continue # released between our two calls: try again
    fi
    current=$(query "" gcloud storage cat "$object#$generation" 2>/dev/null || true)
    expires=$(sed -n 's/^expires=//p' <<<"$current")
    if [[ "$expires" =~ ^[0-9]+$ ]] && ((expires < $(now))); then
      log "lease $LEASE_NAME expired ($(sed -n 's/^holder=//p' <<<"$current")); taking it over"
      if write_lease "$generation"; then
        break
      fi
      continue
    fi
    (($(now) < deadline)) || die "lease $LEASE_NAME is held ($(tr '\n' ' ' <<<"$current")); gave up after ${wait_for}s"
    log "lease $LEASE_NAME is held ($(tr '\n' ' ' <<<"$current")); waiting"
    pause 15
  done
  generation=$(query "${DRY_RUN_LEASE_GENERATION:-1700000000000001}" \
    gcloud storage objects describe "$object" --format='value(generation)')
  log "holding lease $LEASE_NAME (generation $generation) for at most ${ttl}s"
  printf 'generation=%s\n' "$generation"
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then printf 'generation=%s\n' "$generation" >>"$GITHUB_OUTPUT"; fi
}

release() {
  require_env LEASE_GENERATION
  if run gcloud storage rm "$object" --if-generation-match="$LEASE_GENERATION"; then
    log "released lease $LEASE_NAME"
  else
    # Not ours any more (it expired and another run took it) or already gone: nothing to undo, but say so.
    printf '::warning::lease %s (generation %s) was not released: expired and taken over, or already gone\n' \
      "$LEASE_NAME" "$LEASE_GENERATION" >&2
  fi
}

case "${1:-}" in
acquire) acquire ;;
release) release ;;
*) die "usage: lease.sh acquire|release" ;;
esac

#!/usr/bin/env bash
# payload-keys.sh add ID VERSION | drop ID VERSION | status
#
# The commands of a payload-key rotation (infra/README.md, "Payload keys"). A key never appears in an argument, a
# log line or a dry run: it goes from openssl or Secret Manager to Secret Manager through pipes only.
#   add ID VERSION   adds a version of the ring secret: the ring of version VERSION with a new random key ID after
#                    its keys (it seals only once ORCA_PUSH_PAYLOAD_SEAL_KEY names it). Prints the new version.
#   drop ID VERSION  adds a version of the ring secret: the ring of version VERSION without key ID. Prints it.
#   status           for each function, the revision serving 100% of its traffic with the versions of the ring and
#                    digest key secrets it mounts and its ORCA_PUSH_PAYLOAD_SEAL_KEY; exits 1 when traffic is split
#                    or the functions do not all serve the same ones (a step is not live everywhere yet).
# A new version is mounted by nothing until Terraform pins it (secret_versions) and the apply rolls it out.
# Env: PROJECT_ID; REGION and NAME_PREFIX (status); optional SECRET (orca-cloud-push-payload-keys). DRY_RUN=1: lib.sh.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

require_env PROJECT_ID
secret=${SECRET:-orca-cloud-push-payload-keys}
id_pattern='^[A-Za-z0-9_-]{1,32}$'

usage() { die "usage: payload-keys.sh add ID VERSION | drop ID VERSION | status"; }

# ring VERSION: the ring of that version of the secret. Dry run: keys k1 and k2, or DRY_RUN_RING.
ring() {
  [[ "$1" =~ ^[0-9]+$ ]] || die "VERSION must be a version number (the one secret_versions pins), got '$1'"
  query "${DRY_RUN_RING:-k1:$(printf 'k%.0s' {1..43})=,k2:$(printf 'q%.0s' {1..43})=}" \
    gcloud secrets versions access "$1" --secret="$secret" --project="$PROJECT_ID"
}

# ring_ids RING: the ids of its entries, one per line.
ring_ids() { tr ',' '\n' <<<"$1" | cut -d: -f1; }

# add_version RING: adds it as the secret's next version and prints that version's number.
add_version() {
  local name
  name=$(printf '%s' "$1" | query "projects/$PROJECT_ID/secrets/$secret/versions/9" \
    gcloud secrets versions add "$secret" --data-file=- --project="$PROJECT_ID" --format='value(name)')
  printf '%s\n' "${name##*/}"
}

add() {
  local id=$1 current key
  [[ "$id" =~ $id_pattern ]] || die "ID must be 1..32 letters, digits, '-' or '_', got '$id'"
  current=$(ring "$2")
  ! ring_ids "$current" | grep -qxF -- "$id" || die "version $2 already holds a key $id"
  key=$(query "$(printf 'n%.0s' {1..43})=" openssl rand -base64 32)
  add_version "$current,$id:$key"
  log "added key $id after $(ring_ids "$current" | paste -sd, -): pin this version in secret_versions[\"payload-keys\"], apply"
}

drop() {
  local id=$1 current kept
  [[ "$id" =~ $id_pattern ]] || die "ID must be 1..32 letters, digits, '-' or '_', got '$id'"
  current=$(ring "$2")
  ring_ids "$current" | grep -qxF -- "$id" || die "version $2 holds no key $id"
  kept=$(tr ',' '\n' <<<"$current" | grep -v -- "^$id:" | paste -sd, -) || true
  [[ -n "$kept" ]] || die "dropping $id would leave the ring empty"
  add_version "$kept"
  log "dropped key $id, kept $(ring_ids "$kept" | paste -sd, -): pin this version in secret_versions[\"payload-keys\"], apply"
}

# What the dry run's services answer: all traffic on one revision (DRY_RUN_SERVICE replaces it), which mounts ring
# version 3 and digest key version 1 and seals with k2.
canned_service='{"status":{"traffic":[{"revisionName":"rev-00002","percent":100,"latestRevision":true}]}}'
canned_revision='{"spec":{"containers":[{"env":[{"name":"ORCA_PUSH_PAYLOAD_SEAL_KEY","value":"k2"},
{"name":"ORCA_PUSH_PAYLOAD_KEYS","valueFrom":{"secretKeyRef":{"name":"orca-cloud-push-payload-keys","key":"3"}}},
{"name":"ORCA_PUSH_DIGEST_KEY","valueFrom":{"secretKeyRef":{"name":"orca-cloud-push-digest-key","key":"1"}}}]}]}}'

status() {
  require_env REGION NAME_PREFIX
  local key svc serving keys first="" bad=0
  while read -r key _; do
    svc="$NAME_PREFIX-$key"
    serving=$(query "${DRY_RUN_SERVICE:-$canned_service}" gcloud run services describe "$svc" --project="$PROJECT_ID" --region="$REGION" \
      --format=json | jq -r '[.status.traffic[]? | select(.percent == 100) | .revisionName] | .[0] // empty')
    keys="(traffic split)"
    if [[ -n "$serving" ]]; then
      keys=$(query "$canned_revision" gcloud run revisions describe "$serving" --project="$PROJECT_ID" \
        --region="$REGION" --format=json | jq -r '[.spec.containers[0].env[]? |
          select(.name | IN("ORCA_PUSH_PAYLOAD_KEYS", "ORCA_PUSH_DIGEST_KEY", "ORCA_PUSH_PAYLOAD_SEAL_KEY")) |
          "\(.name)=\(.valueFrom.secretKeyRef.key // .value)"] | sort | join(" ")')
    else
      bad=1
    fi
    printf '%s %s: %s\n' "$svc" "${serving:-}" "$keys"
    first=${first:-$keys}
    [[ "$keys" == "$first" ]] || bad=1
  done < <(functions_list)
  ((bad == 0)) || die "not every function serves one revision with the same keys: the step is not live everywhere yet"
}

case "${1:-}" in
add | drop) (($# == 3)) || usage ;;
status) (($# == 1)) || usage ;;
*) usage ;;
esac
"$@"

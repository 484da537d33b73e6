#!/usr/bin/env bash
# Roll SOURCE_SHA out to every function, traffic last:
#   1. upload the source archive (git archive of the commit) to gs://$DEPLOY_BUCKET/source/<sha>.zip;
#   2. per function: pin its traffic on the revision serving now, then deploy the new source through the Cloud
#      Functions v2 API with allTrafficOnLatestRevision=false, so the new revision takes no traffic;
#   3. wait for the builds; check each new revision is ready and the pin held; tag it "$ROLLOUT_TAG";
#   4. probe: GET /ready on every tagged revision (through the probe workflow, infra/deploy.tf: the runner cannot
#      reach internal-ingress services), and a validate-only FCM send as the runtime service account;
#   5. only when every probe passed: send 100% of each function's traffic to its new (latest) revision, the private
#      functions (deliver, sweep) first: they read what the public ones write (a sealed batch), so a new format is
#      read by every live deliver before any live send writes it.
# Any failure before step 5 exits non-zero and leaves every function's traffic on the revision it was on.
#
# Env: SOURCE_SHA, PROJECT_ID, REGION, NAME_PREFIX, DEPLOY_BUCKET, PROBE_WORKFLOW, RUNTIME_SA, FCM_PROJECT;
#      optional SOURCE_DIR (.), ROLLOUT_TAG (candidate), DEPLOY_TIMEOUT_SECONDS (1800). DRY_RUN=1: see lib.sh.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

require_env SOURCE_SHA PROJECT_ID REGION NAME_PREFIX DEPLOY_BUCKET PROBE_WORKFLOW RUNTIME_SA FCM_PROJECT
check_sha "$SOURCE_SHA"
source_dir=${SOURCE_DIR:-.}
tag=${ROLLOUT_TAG:-candidate}
object="source/$SOURCE_SHA.zip"
functions_api="https://cloudfunctions.googleapis.com/v2"
run_flags=(--project="$PROJECT_ID" --region="$REGION")

keys=()
while read -r key _; do keys+=("$key"); done < <(functions_list)
declare -A old_rev new_rev operation tag_url service_url

# --- dry-run answers (what Google would say on the happy path) -------------------------------------------------
canned_service() { # SERVICE STAGE: before | deployed | tagged
  local svc=$1 stage=$2
  local host="$svc-dryrun-uc.a.run.app" old="$svc-00001-old" new="$svc-00002-new" latest extra=""
  latest=$new
  [[ "$stage" != before ]] || latest=$old
  [[ "$stage" != tagged ]] || extra=",{\"revisionName\":\"$new\",\"tag\":\"$tag\",\"url\":\"https://$tag---$host\"}"
  printf '{"status":{"url":"https://%s","latestCreatedRevisionName":"%s","latestReadyRevisionName":"%s",' \
    "$host" "$latest" "$latest"
  printf '"traffic":[{"revisionName":"%s","percent":100}%s]}}\n' "$old" "$extra"
}
canned_probe() {
  local key
  for key in "${keys[@]}"; do jq -cn --arg k "$key" '{name:$k, code:200}'; done | jq -cs '{results:.}'
}
canned_fcm=$'{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT"}}\n400'

# --- helpers --------------------------------------------------------------------------------------------------
describe() { # KEY STAGE -> the service as JSON
  local svc="$NAME_PREFIX-$1" canned=""
  if dry_run; then canned=$(canned_service "$svc" "$2"); fi
  query "$canned" gcloud run services describe "$svc" "${run_flags[@]}" --format=json
}

# The one revision taking 100% of the traffic, or nothing when traffic is split.
serving_revision() {
  jq -r '[.status.traffic[]? | select(.percent == 100) | .revisionName] | if length == 1 then .[0] else empty end'
}

fail_rollout() {
  local key
  {
    printf '::error::rollout of %s stopped: %s\n' "$SOURCE_SHA" "$1"
    printf 'Traffic was not shifted. Each function keeps serving its previous revision:\n'
    for key in "${keys[@]}"; do printf '  %s-%s: %s\n' "$NAME_PREFIX" "$key" "${old_rev[$key]:-unchanged}"; done
  } >&2
  exit 1
}

wait_operation() { # KEY
  local key=$1 deadline=$((SECONDS + ${DEPLOY_TIMEOUT_SECONDS:-1800})) answer
  while true; do
    answer=$(query '{"done":true,"response":{}}' curl -sS --fail-with-body \
      -H "Authorization: Bearer $token" "$functions_api/${operation[$key]}") ||
      fail_rollout "$NAME_PREFIX-$key: cannot read its deploy operation: $answer"
    if [[ $(jq -r '.done // false' <<<"$answer") == true ]]; then
      if jq -e '.error' >/dev/null <<<"$answer"; then
        fail_rollout "$NAME_PREFIX-$key: deploy failed: $(jq -c '.error' <<<"$answer")"
      fi
      return
    fi
    ((SECONDS < deadline)) || fail_rollout "$NAME_PREFIX-$key: deploy still running after ${DEPLOY_TIMEOUT_SECONDS:-1800}s"
    pause 15
  done
}

# --- 1. source archive ----------------------------------------------------------------------------------------
if dry_run; then
  work=/tmp/orca-push-rollout
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
run git -C "$source_dir" archive --format=zip --output="$work/source.zip" "$SOURCE_SHA"
run gcloud storage cp "$work/source.zip" "gs://$DEPLOY_BUCKET/$object"

# --- 2. pin traffic, deploy with no traffic ---------------------------------------------------------------------
token=$(query DRY_RUN_ACCESS_TOKEN gcloud auth print-access-token)
patch=$(jq -cn --arg b "$DEPLOY_BUCKET" --arg o "$object" \
  '{buildConfig:{source:{storageSource:{bucket:$b, object:$o}}}, serviceConfig:{allTrafficOnLatestRevision:false}}')
for key in "${keys[@]}"; do
  svc="$NAME_PREFIX-$key"
  desc=$(describe "$key" before)
  old_rev[$key]=$(serving_revision <<<"$desc")
  [[ -n "${old_rev[$key]}" ]] ||
    fail_rollout "$svc: traffic is split ($(jq -c '.status.traffic' <<<"$desc")); send it to one revision first"
  run gcloud run services update-traffic "$svc" "${run_flags[@]}" --to-revisions="${old_rev[$key]}=100" --quiet
  answer=$(query "{\"name\":\"projects/$PROJECT_ID/locations/$REGION/operations/dry-run-$key\"}" \
    curl -sS --fail-with-body -X PATCH -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data "$patch" \
    "$functions_api/projects/$PROJECT_ID/locations/$REGION/functions/$svc?updateMask=buildConfig.source.storageSource,serviceConfig.allTrafficOnLatestRevision") ||
    fail_rollout "$svc: deploy refused: $answer"
  operation[$key]=$(jq -r '.name' <<<"$answer")
done

# --- 3. builds done, pins held, tag the new revisions -----------------------------------------------------------
for key in "${keys[@]}"; do wait_operation "$key"; done
for key in "${keys[@]}"; do
  svc="$NAME_PREFIX-$key"
  desc=$(describe "$key" deployed)
  new_rev[$key]=$(jq -r '.status.latestReadyRevisionName' <<<"$desc")
  [[ "${new_rev[$key]}" == "$(jq -r '.status.latestCreatedRevisionName' <<<"$desc")" ]] ||
    fail_rollout "$svc: its newest revision is not ready"
  [[ "${new_rev[$key]}" != "${old_rev[$key]}" ]] || fail_rollout "$svc: the deploy made no new revision"
  serving=$(serving_revision <<<"$desc")
  [[ "$serving" == "${old_rev[$key]}" ]] ||
    fail_rollout "$svc: the deploy moved traffic to '$serving' although it was pinned on ${old_rev[$key]}"
  run gcloud run services update-traffic "$svc" "${run_flags[@]}" --update-tags="$tag=${new_rev[$key]}" --quiet
  desc=$(describe "$key" tagged)
  tag_url[$key]=$(jq -r --arg t "$tag" '.status.traffic[] | select(.tag == $t) | .url' <<<"$desc")
  service_url[$key]=$(jq -r '.status.url' <<<"$desc")
  [[ "${tag_url[$key]}" == https://* ]] || fail_rollout "$svc: no URL for tag $tag"
done

# --- 4. probes --------------------------------------------------------------------------------------------------
targets=$(for key in "${keys[@]}"; do
  jq -cn --arg n "$key" --arg u "${tag_url[$key]}" --arg a "${service_url[$key]}" '{name:$n, url:$u, audience:$a}'
done | jq -cs '{targets:.}')
result=$(query "${DRY_RUN_PROBE_RESULT:-$(canned_probe)}" gcloud workflows run "$PROBE_WORKFLOW" \
  --project="$PROJECT_ID" --location="$REGION" --data="$targets" --format='value(result)') || result=""
bad=$(jq -r --argjson n "${#keys[@]}" \
  'if (.results | length) != $n then "expected \($n) results, got \(.results | length)"
   else [.results[] | select(.code != 200) | "\(.name) answered \(.code)"] | join(", ") end' \
  <<<"$result" 2>/dev/null) || bad="unreadable probe result: $result"
[[ -z "$bad" ]] || fail_rollout "/ready probe failed: $bad"
log "/ready: every new revision answered 200"

# Validate-only FCM send as the runtime service account, to a token that cannot exist. FCM checks the credentials,
# the project and the API before the token, so "not a valid registration token" (400) proves the rest works; a
# 401/403/404-project answer is a broken deploy. validate_only never delivers anything.
fcm_token=$(query DRY_RUN_RUNTIME_TOKEN gcloud auth print-access-token --impersonate-service-account="$RUNTIME_SA")
answer=$(query "${DRY_RUN_FCM_ANSWER:-$canned_fcm}" curl -sS -w '\n%{http_code}' -X POST \
  -H "Authorization: Bearer $fcm_token" -H 'Content-Type: application/json' \
  --data '{"validate_only":true,"message":{"token":"orca-push-deploy-probe","notification":{"title":"deploy probe","body":"deploy probe"}}}' \
  "https://fcm.googleapis.com/v1/projects/$FCM_PROJECT/messages:send") || fail_rollout "FCM probe: no answer"
code=${answer##*$'\n'}
body=${answer%$'\n'*}
case "$code" in
200) ;;
400) grep -qi 'registration token' <<<"$body" || fail_rollout "FCM probe: 400 not about the token: $body" ;;
404) grep -q 'UNREGISTERED' <<<"$body" || fail_rollout "FCM probe: 404: $body" ;;
*) fail_rollout "FCM probe: HTTP $code: $body" ;;
esac
log "FCM: credentials and project accepted (validate_only, HTTP $code)"

# --- 5. shift -----------------------------------------------------------------------------------------------------
# --to-latest (not a pin on the revision) so that later Terraform applies go live as usual; first make sure the
# latest revision is still the one probed.
for key in "${keys[@]}"; do
  desc=$(describe "$key" tagged)
  [[ "$(jq -r '.status.latestCreatedRevisionName' <<<"$desc")" == "${new_rev[$key]}" ]] ||
    fail_rollout "$NAME_PREFIX-$key: a newer revision than the probed ${new_rev[$key]} appeared"
done
shifted=()
shift_order=()
while read -r key _ visibility; do [[ "$visibility" != private ]] || shift_order+=("$key"); done < <(functions_list)
while read -r key _ visibility; do [[ "$visibility" == private ]] || shift_order+=("$key"); done < <(functions_list)
for key in "${shift_order[@]}"; do
  run gcloud run services update-traffic "$NAME_PREFIX-$key" "${run_flags[@]}" --to-latest --quiet ||
    die "shifting $NAME_PREFIX-$key failed after ${shifted[*]:-none} had shifted: finish by hand (infra/README.md, Rollback)"
  shifted+=("$key")
done

{
  printf '### orca-push rollout of %s\n\n| function | previous revision | serving now |\n|---|---|---|\n' "$SOURCE_SHA"
  for key in "${keys[@]}"; do
    printf '| %s-%s | %s | %s |\n' "$NAME_PREFIX" "$key" "${old_rev[$key]}" "${new_rev[$key]}"
  done
} >>"${GITHUB_STEP_SUMMARY:-/dev/stderr}"
log "rollout of $SOURCE_SHA complete"

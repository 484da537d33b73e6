#!/usr/bin/env bash
# Golden tests of the deploy scripts: each scenario runs a script with DRY_RUN=1 and compares the commands it would
# run (and its exit status) against workflows/testdata/<scenario>.golden. UPDATE_GOLDEN=1 rewrites the files;
# review the diff before committing it. Run by workflows/check-infra.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
golden_dir="$here/testdata"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

sha=0123456789abcdef0123456789abcdef01234567
export DRY_RUN=1 SOURCE_SHA=$sha PROJECT_ID=onorca-cloud REGION=us-central1 NAME_PREFIX=orca-cloud-push \
  DEPLOY_BUCKET=onorca-cloud-orca-push-deploy PROBE_WORKFLOW=orca-cloud-push-probe \
  RUNTIME_SA=orca-cloud-push@onorca-cloud.iam.gserviceaccount.com FCM_PROJECT=onorca-cloud \
  SQL_INSTANCE=onorca-cloud:us-central1:orca-cloud-push-pg DATABASE_NAME=orca_push \
  LEASE_BUCKET=onorca-cloud-orca-push-deploy LEASE_NAME=orca-push-schema LEASE_HOLDER=test/1/1
unset GITHUB_OUTPUT GITHUB_STEP_SUMMARY

# scenario NAME WANT_STATUS [VAR=VALUE ...] -- SCRIPT [ARGS...]
scenario() {
  local name=$1 want=$2 status=0
  shift 2
  local vars=()
  while [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  local out="$tmp/$name.out"
  : >"$out"
  env "${vars[@]}" DRY_RUN_LOG="$out" "$here/$1" "${@:2}" >/dev/null 2>"$tmp/$name.err" || status=$?
  printf 'exit %s\n' "$status" >>"$out"
  if [[ "${UPDATE_GOLDEN:-0}" == 1 ]]; then
    cp "$out" "$golden_dir/$name.golden"
  fi
  if [[ "$status" != "$want" ]]; then
    printf 'FAIL %s: exit %s, want %s\n' "$name" "$status" "$want"
    sed 's/^/    /' "$tmp/$name.err"
    failures=$((failures + 1))
  elif ! diff -u "$golden_dir/$name.golden" "$out" >"$tmp/$name.diff"; then
    printf 'FAIL %s: commands differ from testdata/%s.golden (UPDATE_GOLDEN=1 to accept):\n' "$name" "$name"
    sed 's/^/    /' "$tmp/$name.diff"
    failures=$((failures + 1))
  else
    printf 'ok   %s\n' "$name"
  fi
}

# must_not_contain NAME PATTERN: a failed rollout must never have shifted traffic; a key never shows.
must_not_contain() {
  if grep -q -- "$2" "$tmp/$1.out"; then
    printf 'FAIL %s: ran %s\n' "$1" "$2"
    failures=$((failures + 1))
  fi
}

# expect_error NAME TEXT: the scenario failed for the reason it plants.
expect_error() {
  if ! grep -qF -- "$2" "$tmp/$1.err"; then
    printf 'FAIL %s: stderr lacks %s\n' "$1" "$2"
    failures=$((failures + 1))
  fi
}

scenario rollout 0 -- rollout.sh
# Readers first: deliver takes the new revision's traffic before send does, so a new stored format (a sealed batch)
# is never written by a live send while a live deliver cannot read it.
if (($(grep -n 'update-traffic orca-cloud-push-deliver .*--to-latest' "$tmp/rollout.out" | cut -d: -f1) > \
  $(grep -n 'update-traffic orca-cloud-push-send .*--to-latest' "$tmp/rollout.out" | cut -d: -f1))); then
  printf 'FAIL rollout: send shifted before deliver\n'
  failures=$((failures + 1))
fi
scenario rollout-probe-fails 1 \
  'DRY_RUN_PROBE_RESULT={"results":[{"name":"host-challenge","code":200},{"name":"host-session","code":200},{"name":"devices","code":200},{"name":"send","code":503},{"name":"receipts","code":200},{"name":"deliver","code":200},{"name":"sweep","code":200}]}' \
  -- rollout.sh
must_not_contain rollout-probe-fails --to-latest
expect_error rollout-probe-fails "/ready probe failed: send answered 503"
scenario rollout-probe-missing 1 'DRY_RUN_PROBE_RESULT={"results":[]}' -- rollout.sh
must_not_contain rollout-probe-missing --to-latest
expect_error rollout-probe-missing "expected 7 results, got 0"
scenario rollout-fcm-denied 1 \
  $'DRY_RUN_FCM_ANSWER={"error":{"code":403,"status":"PERMISSION_DENIED","message":"denied"}}\n403' -- rollout.sh
must_not_contain rollout-fcm-denied --to-latest
expect_error rollout-fcm-denied "FCM probe: HTTP 403"
scenario rollout-short-sha 1 SOURCE_SHA=0123456 -- rollout.sh
expect_error rollout-short-sha "full 40-character lowercase commit SHA"
scenario validate-source 0 SOURCE_DIR=source -- validate-source.sh
scenario validate-branch-name 1 SOURCE_SHA=main -- validate-source.sh
scenario validate-upper-case 1 SOURCE_SHA=0123456789ABCDEF0123456789ABCDEF01234567 -- validate-source.sh
scenario validate-too-long 1 SOURCE_SHA=${sha}8 -- validate-source.sh
scenario lease-acquire 0 -- lease.sh acquire
scenario lease-release 0 LEASE_GENERATION=1700000000000001 -- lease.sh release
scenario migrate 0 SOURCE_DIR=source -- migrate.sh
scenario payload-keys-add 0 -- payload-keys.sh add k3 2
must_not_contain payload-keys-add nnnnnnnnnn # no key in a command: the new one, nor the ring's
must_not_contain payload-keys-add kkkkkkkkkk
scenario payload-keys-add-existing 1 -- payload-keys.sh add k2 2
expect_error payload-keys-add-existing "version 2 already holds a key k2"
scenario payload-keys-drop 0 -- payload-keys.sh drop k1 3
scenario payload-keys-drop-last 1 'DRY_RUN_RING=k1:AAAA' -- payload-keys.sh drop k1 3
expect_error payload-keys-drop-last "would leave the ring empty"
scenario payload-keys-status 0 -- payload-keys.sh status
scenario payload-keys-status-split 1 \
  'DRY_RUN_SERVICE={"status":{"traffic":[{"revisionName":"a","percent":50},{"revisionName":"b","percent":50}]}}' \
  -- payload-keys.sh status
expect_error payload-keys-status-split "not live everywhere yet"

if ((failures > 0)); then
  printf '%d dry-run scenario(s) failed\n' "$failures"
  exit 1
fi
printf 'dry-run scenarios: all passed\n'

#!/usr/bin/env bash
# Every offline check of the deployment (infra/, .github/, workflows/), as one command:
#   workflows/check-infra.sh
# 1. shellcheck of the deploy scripts;
# 2. ../shared/tools/infra-check/check.sh: tofu fmt + validate against the real google 6.50 schema, tflint,
#    actionlint (+ shellcheck of run: steps);
# 3. tofu test with a mocked google provider (infra/tests/*.tftest.hcl), on a copy of the module without imports.tf;
# 4. go test ./infra: project rules read from the parsed .tf files (hcl/v2);
# 5. the deploy scripts' dry runs against their golden command lists (workflows/test-dry-run.sh);
# 6. the workflow's own rules (gate, keyless auth, steps are scripts).
# Exits non-zero when any check fails. Needs go, git, jq; installs shellcheck (apt) when missing. The first run on
# a machine builds the tools into ~/.cache/infra-tools (about 6 minutes); later runs take seconds.
# INFRA_DIR=<copy of infra> checks another copy of the module (used to plant mistakes without touching infra/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
infra=${INFRA_DIR:-$root/infra}
infra_check=${INFRA_CHECK:-$root/../shared/tools/infra-check/check.sh}
tools=${TOOLS:-$HOME/.cache/infra-tools}
cd "$root"

failed=()
check() {
  local name=$1 start=$SECONDS
  shift
  printf '== %s\n' "$name"
  if "$@"; then
    printf 'ok   %s (%ss)\n' "$name" "$((SECONDS - start))"
  else
    printf 'FAIL %s (%ss)\n' "$name" "$((SECONDS - start))"
    failed+=("$name")
  fi
}

ensure_shellcheck() {
  command -v shellcheck >/dev/null && return
  echo "installing shellcheck (apt)"
  if [[ $(id -u) == 0 ]]; then
    { apt-get install -y -qq shellcheck || { apt-get update -qq && apt-get install -y -qq shellcheck; }; } >/dev/null
  else
    { sudo apt-get install -y -qq shellcheck || { sudo apt-get update -qq && sudo apt-get install -y -qq shellcheck; }; } >/dev/null
  fi
}

shell_scripts() { shellcheck -x workflows/*.sh; }

infra_check() { INFRA="$infra" "$infra_check"; }

tofu_test() {
  local copy
  copy=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: the copy is this call's
  trap "rm -rf '$copy'" RETURN
  cp -r "$infra"/. "$copy"
  rm -rf "$copy/imports.tf" "$copy/.terraform" "$copy"/*.tfstate*
  TF_CLI_CONFIG_FILE="$tools/tofurc" TF_IN_AUTOMATION=1 \
    "$tools/bin/tofu-v1.12.6" -chdir="$copy" test -no-color -var-file=environments/production.tfvars
}

go_rules() { INFRA_DIR="$infra" go test -count=1 ./infra; }

dry_runs() { workflows/test-dry-run.sh; }

# The workflow file is checked by actionlint for syntax; these are its project rules.
workflow_rules() {
  local wf=.github/workflows/cloud-push-deploy.yml action=.github/actions/cloud-sql-rollout-lease/action.yml ok=0
  grep -q "if: vars.ORCA_CLOUD_OPERATIONS_ENABLED == 'true'" "$wf" || { echo "$wf: not gated on vars.ORCA_CLOUD_OPERATIONS_ENABLED == 'true'"; ok=1; }
  grep -q "id-token: write" "$wf" || { echo "$wf: no id-token: write (Workload Identity Federation)"; ok=1; }
  grep -q "google-github-actions/auth@" "$wf" || { echo "$wf: does not authenticate with google-github-actions/auth"; ok=1; }
  if grep -Eq "credentials_json|GOOGLE_CREDENTIALS|secrets\.[A-Z_]*(KEY|CREDENTIALS)" "$wf"; then
    echo "$wf: uses a service account key; use Workload Identity Federation"
    ok=1
  fi
  grep -q "uses: ./.github/actions/cloud-sql-rollout-lease" "$wf" || { echo "$wf: schema step not under the rollout lease"; ok=1; }
  grep -q "if: always() && steps.acquire.outcome == 'success'" "$action" || { echo "$action: lease release is not always-run"; ok=1; }
  # Step logic lives in workflows/: every run: line calls a script there (or the lease action's command input).
  # shellcheck disable=SC2016 # the literal YAML text, not an expansion
  local line lease_cmd='run: bash -c "$LEASE_RUN"'
  while IFS= read -r line; do
    if [[ ! "$line" =~ run:\ (SOURCE_DIR=source\ )?workflows/[a-z-]+\.sh( [a-z]+)?$ && "$line" != *"$lease_cmd" ]]; then
      echo "step logic outside workflows/: $line"
      ok=1
    fi
  done < <(grep -hE '^\s+(- )?run: \S' "$wf" "$action")
  return "$ok"
}

check "shellcheck available" ensure_shellcheck
check "shellcheck workflows/*.sh" shell_scripts
check "infra-check (fmt, validate, tflint, actionlint)" infra_check
check "tofu test (mocked provider)" tofu_test
check "go test ./infra (hcl rules)" go_rules
check "deploy scripts dry run vs golden" dry_runs
check "workflow rules" workflow_rules

if ((${#failed[@]} > 0)); then
  printf '\ncheck-infra: %d failed: %s\n' "${#failed[@]}" "$(IFS=,; echo "${failed[*]}")"
  exit 1
fi
printf '\ncheck-infra: all passed\n'

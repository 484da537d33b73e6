#!/usr/bin/env bash
# The schema step of a rollout: apply the embedded migrations of the checked-out source to the production database.
# Run it inside the cloud-sql-rollout-lease action (two rollouts never migrate at once); `go run ./scripts/migrate`
# itself is idempotent and safe against concurrent runs.
#
# The instance's private IP is out of a GitHub-hosted runner's reach, so this starts the Cloud SQL Auth Proxy
# (public IP: connectors only, no authorized networks; infra/database.tf), logged in with IAM as the runtime service
# account, the database user that owns the schema, and points the migrate command at it.
# Env: SQL_INSTANCE (project:region:instance), RUNTIME_SA (email), DATABASE_NAME, SOURCE_DIR (default .),
#      PROXY_PORT (default 5432), CLOUD_SQL_PROXY_VERSION.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

require_env SQL_INSTANCE RUNTIME_SA DATABASE_NAME
source_dir=${SOURCE_DIR:-.}
port=${PROXY_PORT:-5432}
proxy_version=${CLOUD_SQL_PROXY_VERSION:-v2.28.0}
# IAM database user: the service account email without ".gserviceaccount.com"; its "@" is escaped in the URL.
db_user=${RUNTIME_SA%.gserviceaccount.com}
database_url="postgres://${db_user//@/%40}@127.0.0.1:$port/$DATABASE_NAME?sslmode=disable"

if dry_run || ! command -v cloud-sql-proxy >/dev/null; then
  # Built from the Go module proxy: checksummed by sum.golang.org, unlike a downloaded binary.
  run go install "github.com/GoogleCloudPlatform/cloud-sql-proxy/v2@$proxy_version"
  PATH="$(go env GOPATH)/bin:$PATH"
fi

proxy_cmd=(cloud-sql-proxy --auto-iam-authn --impersonate-service-account="$RUNTIME_SA"
  --address=127.0.0.1 --port="$port" --exit-zero-on-sigterm "$SQL_INSTANCE")
if dry_run; then
  print_cmd "${proxy_cmd[@]}" '&'
else
  "${proxy_cmd[@]}" &
  proxy_pid=$!
  trap 'kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 60); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    kill -0 "$proxy_pid" 2>/dev/null || die "cloud-sql-proxy exited before listening"
    sleep 1
  done
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || die "cloud-sql-proxy is not listening on 127.0.0.1:$port"
fi

# Without ORCA_PUSH_CLOUDSQL_INSTANCE the command dials the URL as given: the proxy on localhost.
run env -u ORCA_PUSH_CLOUDSQL_INSTANCE ORCA_PUSH_DATABASE_URL="$database_url" \
  go -C "$source_dir" run ./scripts/migrate
log "schema of $DATABASE_NAME is current for this source"

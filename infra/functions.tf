# One source archive, one Cloud Run function per entry point (design.md, "Functions"; go-dependencies.md §2b).
# The list of functions is repeated in workflows/functions.tsv for the deploy scripts; infra/infra_test.go keeps the
# two equal.

locals {
  functions = {
    "host-challenge" = { entry_point = "HostChallenge", public = true }
    "host-session"   = { entry_point = "HostSession", public = true }
    "devices"        = { entry_point = "Devices", public = true }
    "send"           = { entry_point = "Send", public = true }
    "receipts"       = { entry_point = "Receipts", public = true }
    # Called only by Cloud Tasks (OIDC as the tasks service account).
    "deliver" = { entry_point = "Deliver", public = false }
    # Called only by Cloud Scheduler every minute (OIDC as the scheduler service account).
    "sweep" = { entry_point = "Sweep", public = false }
  }
  public_functions = { for k, f in local.functions : k => f if f.public }

  function_names = { for k in keys(local.functions) : k => "${var.name_prefix}-${k}" }

  # Cloud Run's deterministic URL (https://SERVICE-PROJECT_NUMBER.REGION.run.app). It is known before the function
  # exists, so every function, the queue and the Scheduler job can name deliver's and sweep's URL without a cycle
  # (the functions' own env needs deliver's URL: deliver and sweep schedule tasks too).
  function_urls     = { for k, n in local.function_names : k => "https://${n}-${data.google_project.this.number}.${var.region}.run.app" }
  deliver_url       = local.function_urls["deliver"]
  sweep_url         = local.function_urls["sweep"]
  tasks_queue_names = [for q in google_cloud_tasks_queue.deliver : q.name]
  tasks_queue_ids   = [for n in local.tasks_queue_names : "projects/${var.project_id}/locations/${var.region}/queues/${n}"]
  # The queues the functions are told of (ORCA_PUSH_TASKS_QUEUE): the first tasks_queues_advertised, or all. Every
  # queue keeps dispatching whether advertised or not, so a queue no longer advertised drains (README "Queues").
  tasks_queues_advertised = coalesce(var.tasks_queues_advertised, var.tasks_queue_count)
  tasks_queue_ids_used    = slice(local.tasks_queue_ids, 0, min(local.tasks_queues_advertised, length(local.tasks_queue_ids)))
  # Cloud Monitoring's filter for the delivery queues' series (one series per queue).
  tasks_queue_filter = "resource.labels.queue_id=one_of(${join(",", [for n in local.tasks_queue_names : jsonencode(n)])})"

  runtime_sa_email = google_service_account.runtime.email
  # IAM database user name: the service account email without ".gserviceaccount.com" (Cloud SQL IAM auth rule).
  db_iam_user = trimsuffix(local.runtime_sa_email, ".gserviceaccount.com")

  # A Google global external Application Load Balancer hands the backend
  #   x-forwarded-for: [<caller-supplied>,] <client-ip>, <load-balancer-ip>
  # (cloud.google.com/load-balancing/docs/https, "X-Forwarded-For header"), and Cloud Run appends nothing further for
  # traffic that arrives through a serverless NEG: the client is the second entry from the right, i.e. one appender
  # (the LB's own address) sits after it. The public functions' ingress is internal-and-GCLB, so no request reaches
  # them without passing the load balancer; were run.app reachable directly, "1" would let a caller pick its own
  # rate-limit bucket (direct requests carry "<supplied>, <client-ip>").
  trusted_proxy_hops = 1

  gateway_env = {
    ORCA_PUSH_PUBLIC_URL = "https://${var.public_hostname}"
    # The user's "@" must be escaped: pgx reads a raw one as the end of the user (user "orca-cloud-push", host
    # "onorca-cloud.iam@"). No host: the Cloud SQL connector dials ORCA_PUSH_CLOUDSQL_INSTANCE.
    ORCA_PUSH_DATABASE_URL          = "postgres://${urlencode(local.db_iam_user)}@/${google_sql_database.orca_push.name}?sslmode=disable"
    ORCA_PUSH_CLOUDSQL_INSTANCE     = google_sql_database_instance.main.connection_name
    ORCA_PUSH_DATABASE_POOL_MAX     = tostring(var.database_pool_max)
    ORCA_PUSH_APNS_TOPIC            = var.apns_topic
    ORCA_PUSH_FCM_PROJECT_ID        = var.fcm_project_id
    ORCA_PUSH_COALESCE_MS           = tostring(var.coalesce_ms)
    ORCA_PUSH_FCM_MESSAGE           = var.fcm_message
    ORCA_PUSH_DELIVER_INLINE        = var.deliver_inline ? "1" : "0"
    ORCA_PUSH_TRUSTED_PROXY_HOPS    = tostring(local.trusted_proxy_hops)
    ORCA_PUSH_TASKS_QUEUE           = join(",", local.tasks_queue_ids_used)
    ORCA_PUSH_DELIVER_URL           = local.deliver_url
    ORCA_PUSH_TASKS_SERVICE_ACCOUNT = google_service_account.tasks.email
    ORCA_PUSH_TASKS_AUDIENCE        = local.deliver_url
  }
  # The payload ring's sealing key when named (a rotation's step 2, infra/README.md "Payload keys"); unset, the
  # ring's first key seals.
  gateway_seal_env = var.payload_seal_key_id == "" ? {} : { ORCA_PUSH_PAYLOAD_SEAL_KEY = var.payload_seal_key_id }

  # Env var name => Secret Manager secret (key of local.gateway_secret_ids). The APNs secrets already exist
  # (imports.tf); the payload key ring's and the digest key's need their first version before the functions mount
  # them (README).
  gateway_secret_env = {
    ORCA_PUSH_APNS_KEY      = "apns-key"
    ORCA_PUSH_APNS_KEY_ID   = "apns-key-id"
    ORCA_PUSH_APPLE_TEAM_ID = "apple-team-id"
    ORCA_PUSH_PAYLOAD_KEYS  = "payload-keys"
    ORCA_PUSH_DIGEST_KEY    = "digest-key"
  }
}

resource "google_cloudfunctions2_function" "fn" {
  for_each = local.functions

  name        = local.function_names[each.key]
  location    = var.region
  description = "orca-push ${each.key} (entry point ${each.value.entry_point})"

  build_config {
    runtime         = "go126"
    entry_point     = each.value.entry_point
    service_account = google_service_account.build.id
    source {
      storage_source {
        bucket = google_storage_bucket.deploy.name
        object = var.bootstrap_source_object
      }
    }
  }

  service_config {
    service_account_email            = local.runtime_sa_email
    ingress_settings                 = each.value.public ? "ALLOW_INTERNAL_AND_GCLB" : "ALLOW_INTERNAL_ONLY"
    min_instance_count               = var.function_instances[each.key].min
    max_instance_count               = var.function_instances[each.key].max
    max_instance_request_concurrency = var.request_concurrency
    available_cpu                    = "1"
    available_memory                 = "512Mi"
    # deliver: Cloud Tasks gives up on a dispatch after 30 s (the task's dispatch deadline) and retries; a longer
    # function timeout only lets a stuck attempt finish its own bookkeeping.
    timeout_seconds               = 60
    vpc_connector                 = google_vpc_access_connector.main.id
    vpc_connector_egress_settings = "PRIVATE_RANGES_ONLY"
    # The deploy workflow pins traffic and deploys with this false; Terraform must not flip traffic on its own.
    all_traffic_on_latest_revision = false

    environment_variables = merge(local.gateway_env, local.gateway_seal_env)

    dynamic "secret_environment_variables" {
      for_each = local.gateway_secret_env
      content {
        key        = secret_environment_variables.key
        project_id = var.project_id
        secret     = google_secret_manager_secret.gateway[secret_environment_variables.value].secret_id
        # A version pinned per revision: every instance of a revision reads the same ring, whenever it starts, so
        # a rotation step is live exactly when its revision is (README "Payload keys"). "latest" is read at each
        # instance's start.
        version = lookup(var.secret_versions, secret_environment_variables.value, "latest")
      }
    }
  }

  lifecycle {
    # send's CPU at the peak: 2.3 ms a push (infra/README.md, "Capacity and cost") on 1-vCPU instances kept under 60 %.
    precondition {
      condition     = each.key != "send" || var.function_instances["send"].max * 0.6 >= var.capacity_peak_pushes_per_second * 0.0023
      error_message = "send's ${var.function_instances["send"].max} instances cannot take ${var.capacity_peak_pushes_per_second} pushes a second at 2.3 ms of CPU each under 60 %: raise function_instances[\"send\"].max"
    }
    # Terraform creates each function from the bootstrap archive; from then on .github/workflows/cloud-push-deploy.yml
    # rolls code out (new source object, no traffic, probe, shift). Ignoring the source keeps `apply` from rolling
    # the code back, and the traffic flag is the workflow's to set per rollout.
    ignore_changes = [
      build_config[0].source,
      service_config[0].all_traffic_on_latest_revision,
    ]
  }

  depends_on = [
    google_project_service.api,
    google_secret_manager_secret_iam_member.runtime_accessor,
    google_project_iam_member.build,
  ]
}

# Plan-time assertions over the module's wiring, with a mocked google provider (nothing reaches Google).
# Run by workflows/check-infra.sh on a copy of the module without imports.tf (OpenTofu 1.12 cannot test a module
# with import blocks), with -var-file=environments/production.tfvars.

mock_provider "google" {
  mock_data "google_project" {
    defaults = {
      number = "123456789012"
    }
  }
  mock_resource "google_sql_database_instance" {
    defaults = {
      connection_name = "onorca-cloud:us-central1:orca-cloud-push-pg"
    }
  }
}

override_resource {
  target = google_service_account.runtime
  values = { email = "orca-cloud-push@onorca-cloud.iam.gserviceaccount.com", member = "serviceAccount:orca-cloud-push@onorca-cloud.iam.gserviceaccount.com" }
}
override_resource {
  target = google_service_account.tasks
  values = { email = "orca-cloud-push-tasks@onorca-cloud.iam.gserviceaccount.com", member = "serviceAccount:orca-cloud-push-tasks@onorca-cloud.iam.gserviceaccount.com" }
}
override_resource {
  target = google_service_account.scheduler
  values = { email = "orca-cloud-push-sched@onorca-cloud.iam.gserviceaccount.com", member = "serviceAccount:orca-cloud-push-sched@onorca-cloud.iam.gserviceaccount.com" }
}
override_resource {
  target = google_service_account.prober
  values = { email = "orca-cloud-push-prober@onorca-cloud.iam.gserviceaccount.com", member = "serviceAccount:orca-cloud-push-prober@onorca-cloud.iam.gserviceaccount.com" }
}
override_resource {
  target = google_service_account.build
  values = { email = "orca-cloud-push-build@onorca-cloud.iam.gserviceaccount.com", member = "serviceAccount:orca-cloud-push-build@onorca-cloud.iam.gserviceaccount.com" }
}

run "wiring" {
  command = apply

  # --- functions ------------------------------------------------------------------------------------------------

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
    f.service_config[0].service_account_email == "orca-cloud-push@onorca-cloud.iam.gserviceaccount.com"])
    error_message = "every function must run as the runtime service account orca-cloud-push@"
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
    f.build_config[0].runtime == "go126" && f.build_config[0].source[0].storage_source[0].bucket == google_storage_bucket.deploy.name])
    error_message = "every function must build with runtime go126 from the deploy bucket"
  }

  assert {
    condition = { for k, f in google_cloudfunctions2_function.fn : k => f.build_config[0].entry_point } == {
      "host-challenge" = "HostChallenge", "host-session" = "HostSession", "devices" = "Devices",
      "send"           = "Send", "receipts" = "Receipts", "deliver" = "Deliver", "sweep" = "Sweep"
    }
    error_message = "the functions and their entry points must be exactly the seven of design.md"
  }

  assert {
    condition = alltrue([for k in ["deliver", "sweep"] :
    google_cloudfunctions2_function.fn[k].service_config[0].ingress_settings == "ALLOW_INTERNAL_ONLY"])
    error_message = "deliver and sweep must take internal traffic only"
  }

  assert {
    condition = alltrue([for k in ["host-challenge", "host-session", "devices", "send", "receipts"] :
    google_cloudfunctions2_function.fn[k].service_config[0].ingress_settings == "ALLOW_INTERNAL_AND_GCLB"])
    error_message = "public functions must only be reachable through the load balancer (ORCA_PUSH_TRUSTED_PROXY_HOPS=1 relies on it)"
  }

  # issue 31 §2: a warm instance for send only, the rarely called functions start cold.
  assert {
    condition = {
      for k, f in google_cloudfunctions2_function.fn : k => [f.service_config[0].min_instance_count, f.service_config[0].max_instance_count]
      } == {
      "host-challenge" = [0, 1], "host-session" = [0, 1], "devices" = [0, 2], "send" = [1, 4], "receipts" = [0, 2],
      "deliver"        = [0, 3], "sweep" = [0, 1]
      } && alltrue([for k, f in google_cloudfunctions2_function.fn :
    f.service_config[0].max_instance_request_concurrency == 80])
    error_message = "production instances per function (min, max): send [1, 4], the rarely called public ones min 0, concurrency 80"
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
      { for s in f.service_config[0].secret_environment_variables : s.key => s.secret } == {
        ORCA_PUSH_APNS_KEY      = "orca-cloud-push-apns-key"
        ORCA_PUSH_APNS_KEY_ID   = "orca-cloud-push-apns-key-id"
        ORCA_PUSH_APPLE_TEAM_ID = "orca-cloud-push-apple-team-id"
        ORCA_PUSH_PAYLOAD_KEYS  = "orca-cloud-push-payload-keys"
        ORCA_PUSH_DIGEST_KEY    = "orca-cloud-push-digest-key"
    }])
    error_message = "every function must mount the three APNs secrets, the payload key ring and the digest key as env"
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
      alltrue([for s in f.service_config[0].secret_environment_variables : s.version == "latest"]) &&
      !contains(keys(f.service_config[0].environment_variables), "ORCA_PUSH_PAYLOAD_SEAL_KEY")
    ])
    error_message = "by default every secret mounts latest and no sealing key is named (the ring's first seals)"
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn : length(setsubtract([
      "ORCA_PUSH_PUBLIC_URL", "ORCA_PUSH_DATABASE_URL", "ORCA_PUSH_CLOUDSQL_INSTANCE", "ORCA_PUSH_DATABASE_POOL_MAX",
      "ORCA_PUSH_APNS_TOPIC", "ORCA_PUSH_FCM_PROJECT_ID", "ORCA_PUSH_COALESCE_MS", "ORCA_PUSH_TRUSTED_PROXY_HOPS",
      "ORCA_PUSH_TASKS_QUEUE", "ORCA_PUSH_DELIVER_URL", "ORCA_PUSH_TASKS_SERVICE_ACCOUNT", "ORCA_PUSH_TASKS_AUDIENCE",
      "ORCA_PUSH_FCM_MESSAGE", "ORCA_PUSH_DELIVER_INLINE",
    ], keys(f.service_config[0].environment_variables))) == 0])
    error_message = "every function must get every gateway env var"
  }

  assert {
    condition = (
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_DATABASE_URL == "postgres://orca-cloud-push%40onorca-cloud.iam@/orca_push?sslmode=disable" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_CLOUDSQL_INSTANCE == "onorca-cloud:us-central1:orca-cloud-push-pg" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_PUBLIC_URL == "https://push.onorca.dev" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_TRUSTED_PROXY_HOPS == "1" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_TASKS_QUEUE == "projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver,projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver-01,projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver-02" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_DELIVER_URL == "https://orca-cloud-push-deliver-123456789012.us-central1.run.app" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_TASKS_AUDIENCE == "https://orca-cloud-push-deliver-123456789012.us-central1.run.app" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_TASKS_SERVICE_ACCOUNT == "orca-cloud-push-tasks@onorca-cloud.iam.gserviceaccount.com" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_FCM_MESSAGE == "data" &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_COALESCE_MS == "0"
    )
    error_message = "gateway env values are wired wrong (database URL, instance, public URL, proxy hops, queue, deliver URL/audience, tasks SA, production's FCM message form and coalescing window for today's phones)"
  }

  # --- who may invoke what --------------------------------------------------------------------------------------

  assert {
    condition = alltrue([for m in values(google_cloud_run_v2_service_iam_member.private_invoker) :
    !contains(["allUsers", "allAuthenticatedUsers"], m.member)])
    error_message = "deliver and sweep must not be public"
  }

  assert {
    condition = alltrue([for k, m in google_cloud_run_v2_service_iam_member.public_invoker :
    !contains(["orca-cloud-push-deliver", "orca-cloud-push-sweep"], m.name)])
    error_message = "allUsers may only invoke the public functions"
  }

  assert {
    condition = toset([for m in values(google_cloud_run_v2_service_iam_member.private_invoker) : "${m.name} ${m.member}" if m.role == "roles/run.invoker"]) == toset([
      "orca-cloud-push-deliver serviceAccount:orca-cloud-push-tasks@onorca-cloud.iam.gserviceaccount.com",
      "orca-cloud-push-deliver serviceAccount:orca-cloud-push-prober@onorca-cloud.iam.gserviceaccount.com",
      "orca-cloud-push-sweep serviceAccount:orca-cloud-push-sched@onorca-cloud.iam.gserviceaccount.com",
      "orca-cloud-push-sweep serviceAccount:orca-cloud-push-prober@onorca-cloud.iam.gserviceaccount.com",
    ])
    error_message = "only the tasks account (deliver), the scheduler account (sweep) and the rollout prober may invoke the private functions"
  }

  # --- Cloud Tasks and Scheduler --------------------------------------------------------------------------------

  assert {
    condition = (
      google_cloud_tasks_queue.deliver[0].http_target[0].uri_override[0].host == "orca-cloud-push-deliver-123456789012.us-central1.run.app" &&
      google_cloud_tasks_queue.deliver[0].http_target[0].uri_override[0].uri_override_enforce_mode == "ALWAYS" &&
      google_cloud_tasks_queue.deliver[0].http_target[0].oidc_token[0].service_account_email == google_service_account.tasks.email &&
      google_cloud_tasks_queue.deliver[0].http_target[0].oidc_token[0].audience == "https://orca-cloud-push-deliver-123456789012.us-central1.run.app"
    )
    error_message = "the queue must only call deliver, with an OIDC token for the tasks service account"
  }

  assert {
    condition = (
      google_cloud_tasks_queue.deliver[0].retry_config[0].min_backoff == "1s" &&
      google_cloud_tasks_queue.deliver[0].retry_config[0].max_backoff == "30s" &&
      google_cloud_tasks_queue.deliver[0].retry_config[0].max_attempts == 20 &&
      google_cloud_tasks_queue.deliver[0].rate_limits[0].max_concurrent_dispatches * var.tasks_queue_count <= 80 * var.function_instances["deliver"].max
    )
    error_message = "queue retry/rate config drifted from the documented policy"
  }

  assert {
    condition = (
      google_cloud_scheduler_job.sweep.schedule == "* * * * *" &&
      google_cloud_scheduler_job.sweep.http_target[0].uri == "https://orca-cloud-push-sweep-123456789012.us-central1.run.app" &&
      google_cloud_scheduler_job.sweep.http_target[0].oidc_token[0].service_account_email == google_service_account.scheduler.email &&
      google_cloud_scheduler_job.sweep.http_target[0].oidc_token[0].audience == google_cloud_scheduler_job.sweep.http_target[0].uri
    )
    error_message = "Scheduler must call sweep every minute with an OIDC token for the scheduler service account"
  }

  assert {
    condition = (
      google_cloud_tasks_queue_iam_member.runtime_enqueuer[0].role == "roles/cloudtasks.enqueuer" &&
      google_cloud_tasks_queue_iam_member.runtime_enqueuer[0].member == google_service_account.runtime.member &&
      google_service_account_iam_member.runtime_acts_as_tasks.role == "roles/iam.serviceAccountUser" &&
      google_service_account_iam_member.runtime_acts_as_tasks.member == google_service_account.runtime.member
    )
    error_message = "the runtime account must be able to enqueue on the queue and act as the tasks account"
  }

  # --- database -------------------------------------------------------------------------------------------------

  assert {
    condition = (
      google_sql_database_instance.main.settings[0].availability_type == "REGIONAL" &&
      google_sql_database_instance.main.settings[0].ip_configuration[0].private_network == google_compute_network.main.id &&
      length(google_sql_database_instance.main.settings[0].ip_configuration[0].authorized_networks) == 0 &&
      contains([for f in google_sql_database_instance.main.settings[0].database_flags : "${f.name}=${f.value}"], "cloudsql.iam_authentication=on") &&
      google_sql_user.runtime.type == "CLOUD_IAM_SERVICE_ACCOUNT" &&
      google_sql_user.runtime.name == "orca-cloud-push@onorca-cloud.iam" &&
      google_sql_database.orca_push.name == "orca_push"
    )
    error_message = "Cloud SQL must be HA, private, IAM-authenticated, with the orca_push database and the runtime IAM user"
  }

  # --- load balancer --------------------------------------------------------------------------------------------

  assert {
    condition = {
      for r in flatten([for pm in google_compute_url_map.public.path_matcher : pm.path_rule]) : one(r.paths) => r.service
      } == {
      "/v1/host/challenge" = google_compute_backend_service.public["host-challenge"].id
      "/v1/host/session"   = google_compute_backend_service.public["host-session"].id
      "/v1/devices"        = google_compute_backend_service.public["devices"].id
      "/v1/devices/*"      = google_compute_backend_service.public["devices"].id
      "/v1/send"           = google_compute_backend_service.public["send"].id
      "/v1/receipts"       = google_compute_backend_service.public["receipts"].id
    }
    error_message = "the URL map must route every contract path to its function"
  }

  assert {
    condition = alltrue([for k, neg in google_compute_region_network_endpoint_group.public :
    neg.cloud_run[0].service == "orca-cloud-push-${k}" && one([for b in google_compute_backend_service.public[k].backend : b.group]) == neg.id])
    error_message = "each backend service must front the serverless NEG of its own function"
  }

  assert {
    condition = (
      one(google_compute_managed_ssl_certificate.public.managed[0].domains) == "push.onorca.dev" &&
      one(flatten([for h in google_compute_url_map.public.host_rule : tolist(h.hosts)])) == "push.onorca.dev" &&
      google_compute_global_forwarding_rule.https.port_range == "443" &&
      google_compute_global_forwarding_rule.https.ip_address == google_compute_global_address.lb.id
    )
    error_message = "push.onorca.dev: certificate, host rule and HTTPS forwarding rule on the static IP"
  }
}

# ORCA_PUSH_FCM_MESSAGE and ORCA_PUSH_COALESCE_MS: the variables reach every function (production.tfvars sets data
# and 0; here the contract's values), and a form the gateway would refuse to start on is refused at plan time.
run "fcm_message_notification" {
  command = apply

  variables {
    fcm_message = "notification"
    coalesce_ms = 3000
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
    f.service_config[0].environment_variables.ORCA_PUSH_FCM_MESSAGE == "notification"])
    error_message = "fcm_message must reach every function as ORCA_PUSH_FCM_MESSAGE"
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
    f.service_config[0].environment_variables.ORCA_PUSH_COALESCE_MS == "3000"])
    error_message = "coalesce_ms must reach every function as ORCA_PUSH_COALESCE_MS"
  }
}

run "fcm_message_refused" {
  command = plan

  variables {
    fcm_message = "both"
  }

  expect_failures = [var.fcm_message]
}

# ORCA_PUSH_DELIVER_INLINE: production delivers what is due at once within its send request; the variable's default
# (the contract's behaviour, every batch through a task) reaches every function as "0".
run "deliver_inline_production" {
  command = apply

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
    f.service_config[0].environment_variables.ORCA_PUSH_DELIVER_INLINE == "1"])
    error_message = "production.tfvars must set deliver_inline, reaching every function as ORCA_PUSH_DELIVER_INLINE=1"
  }
}

run "deliver_inline_default" {
  command = apply

  variables {
    deliver_inline = false
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
    f.service_config[0].environment_variables.ORCA_PUSH_DELIVER_INLINE == "0"])
    error_message = "deliver_inline = false must reach every function as ORCA_PUSH_DELIVER_INLINE=0"
  }
}

# tasks_queue_count: production's three queues, the first with the name the one queue always had, each one the
# runtime account may enqueue on; one queue by default.
run "tasks_queues_production" {
  command = apply

  assert {
    condition     = [for q in google_cloud_tasks_queue.deliver : q.name] == ["orca-cloud-push-deliver", "orca-cloud-push-deliver-01", "orca-cloud-push-deliver-02"]
    error_message = "production must declare three delivery queues, the first keeping its name"
  }

  assert {
    condition = length(google_cloud_tasks_queue_iam_member.runtime_enqueuer) == 3 && alltrue([
      for i, m in google_cloud_tasks_queue_iam_member.runtime_enqueuer : m.name == google_cloud_tasks_queue.deliver[i].name
    ])
    error_message = "the runtime account must be able to enqueue on every delivery queue"
  }
}

run "tasks_queues_default" {
  command = apply

  variables {
    tasks_queue_count               = 1
    tasks_max_concurrent_dispatches = 200
  }

  assert {
    condition = length(google_cloud_tasks_queue.deliver) == 1 && (
    google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_TASKS_QUEUE == "projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver")
    error_message = "one queue: ORCA_PUSH_TASKS_QUEUE is the one queue's path, as before"
  }
}

run "tasks_queues_refused" {
  command = plan

  variables {
    tasks_queue_count = 33
  }

  expect_failures = [var.tasks_queue_count]
}

# The connection budget: production fits its tier; a pool that would overrun it is refused at plan time.
run "sql_connections_fit" {
  command = plan

  assert {
    condition     = local.sql_max_connections == 100 && local.sql_connections_needed == 88
    error_message = "production: 14 instances x 6 + 4 = 88 connections of db-custom-1-3840's 100"
  }
}

run "sql_connections_refused" {
  command = plan

  variables {
    database_pool_max = 10
  }

  expect_failures = [google_sql_database_instance.main]
}

# A rotation's steps are applies: secret_versions pins the version each revision mounts, payload_seal_key_id names
# the sealing key (README "Payload keys").
run "rotation_pins_versions_and_names_the_seal_key" {
  command = apply

  variables {
    secret_versions     = { "payload-keys" = "4", "digest-key" = "1" }
    payload_seal_key_id = "k2"
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
      { for s in f.service_config[0].secret_environment_variables : s.key => s.version } == {
        ORCA_PUSH_APNS_KEY      = "latest"
        ORCA_PUSH_APNS_KEY_ID   = "latest"
        ORCA_PUSH_APPLE_TEAM_ID = "latest"
        ORCA_PUSH_PAYLOAD_KEYS  = "4"
        ORCA_PUSH_DIGEST_KEY    = "1"
    }])
    error_message = "every function must mount the pinned versions, latest for the rest"
  }

  assert {
    condition = alltrue([for k, f in google_cloudfunctions2_function.fn :
    f.service_config[0].environment_variables.ORCA_PUSH_PAYLOAD_SEAL_KEY == "k2"])
    error_message = "every function must get ORCA_PUSH_PAYLOAD_SEAL_KEY from payload_seal_key_id"
  }
}

run "secret_versions_must_name_known_secrets" {
  command = plan
  variables {
    secret_versions = { "payload_keys" = "4" }
  }
  expect_failures = [var.secret_versions]
}

run "secret_versions_must_be_numbers_or_latest" {
  command = plan
  variables {
    secret_versions = { "payload-keys" = "v4" }
  }
  expect_failures = [var.secret_versions]
}

run "seal_key_must_be_a_key_id" {
  command = plan
  variables {
    payload_seal_key_id = "k 2"
  }
  expect_failures = [var.payload_seal_key_id]
}

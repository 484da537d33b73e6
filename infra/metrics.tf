# Cloud Monitoring metrics for the gateway's counters (shared/obs), as log-based metrics.
#
# Each process sums its counters and writes what changed as one Cloud Logging line
#   {"severity":"INFO","message":"orca_push_counters","delivery_sent":3,...}
# from the requests themselves (shared/obs Counters.WriteDue, called by shared/httpx before each answer's first byte):
# a failure the alerts watch (delivery_error/dead/expired, apns_/fcm_credentials_rejected, database_busy/unavailable,
# payload_unopenable, sweep_rescheduled) is on stdout before the answer of the request that counted it, in a line of
# at most one per instance every 2 s (obs.UrgentEvery); the other counters go out at the first answer a minute
# (obs.RoutineEvery) after the last line, and at the SIGTERM flush. How late a count can be: an urgent one 2 s at most
# while requests come, a routine one 1 min plus the gap to the instance's next request, and for an instance that
# gets no request again, until its shutdown (Cloud Run ends an idle instance within about 15 min). The minute
# ticker (Counters.Run) is only a fallback: with request-based billing it gets no CPU between requests. Each counter
# below is a log-based DISTRIBUTION metric that extracts its value from those lines; its _sum series is the counter's
# total, its _count the number of lines that carried it.
#
# Why log-based metrics and not metrics pushed from the process (OpenTelemetry, the Monitoring API): the functions use
# request-based billing, so an instance has CPU only while it serves a request. An exporter's periodic push between
# requests is throttled or never runs, and an instance scaled in takes its unsent points with it. A log line written
# during a request, before its answer (or at the SIGTERM flush), reaches Cloud Logging through the platform's own
# agent, with no CPU of ours, and log-based metrics are counted at ingestion, even for lines a logging exclusion keeps
# out of storage.
#
# Labels stay low-cardinality: function (the Cloud Run service, from the log entry's resource). Provider and outcome
# are in the counter names themselves (delivery_sent/dead/error/expired, apns_/fcm_credentials_rejected), never a
# token, host or registration. infra/infra_test.go keeps this list equal to the counters declared in shared/obs.

locals {
  # Counter name (shared/obs) => what it counts.
  counters = {
    ip_rate_limited           = "Unauthenticated requests refused 429 by the per-IP bucket."
    request_error             = "Requests answered 500 internal (logged as orca_push_request_failed at ERROR)."
    request_canceled          = "Requests that failed because their client went away."
    challenge_issued          = "Host challenges issued."
    challenge_rejected        = "Host challenges refused."
    session_issued            = "Host sessions issued."
    session_rejected          = "Host session requests refused."
    device_registered         = "Device registrations accepted."
    device_rejected           = "Device registrations refused."
    device_deleted            = "Device registrations deleted."
    send_queued               = "Send recipients queued for delivery."
    send_dead                 = "Send recipients refused because their registration is dead."
    send_rate_limited         = "Send recipients refused by the per-registration limit."
    send_error                = "Send recipients that ended in error at admission."
    delivery_sent             = "Batches a provider accepted."
    delivery_dead             = "Batches whose token a provider retired."
    delivery_error            = "Provider calls that failed (retried or terminal)."
    delivery_retry            = "Delivery attempts after the first."
    delivery_expired          = "Batches that expired before a provider accepted them."
    schedule_failed           = "Cloud Tasks schedule calls that failed (the sweep re-schedules)."
    sweep_rescheduled         = "Due batches whose task was lost, re-enqueued by the sweep."
    sweep_cut_off             = "Database sessions the sweep ended for waiting mid-transaction on a silent client."
    database_busy             = "Requests answered 503 busy because the database could not serve in time."
    database_unavailable      = "Requests answered 503 because the database could not be reached."
    shared_tx_members         = "Statements that ran in a transaction shared with others (group commit)."
    shared_tx_failed          = "Members of a shared transaction that failed and ran again alone."
    delivery_dropped          = "Batches dropped because their registration was deleted in flight."
    receipts_read             = "Events POST /v1/receipts answered."
    delivery_late_1s          = "Provider calls made within 1 s after their batch was due."
    delivery_late_5s          = "Provider calls made 1 to 5 s after their batch was due."
    delivery_late_30s         = "Provider calls made 5 to 30 s after their batch was due."
    delivery_late_over_30s    = "Provider calls made more than 30 s after their batch was due."
    alert_latency_1s          = "Alert batches a provider accepted within 1 s of their oldest alert's acceptance."
    alert_latency_5s          = "Alert batches a provider accepted 1 to 5 s after their oldest alert's acceptance."
    alert_latency_30s         = "Alert batches a provider accepted 5 to 30 s after their oldest alert's acceptance."
    alert_latency_over_30s    = "Alert batches a provider accepted more than 30 s after their oldest alert's acceptance."
    apns_credentials_rejected = "APNs calls refused for the gateway's credentials (403 provider token or certificate)."
    fcm_credentials_rejected  = "FCM calls refused for the gateway's credentials (401/403)."
    instance_rate_limited     = "Challenge and session requests refused 429 by the instance's global bucket (a sign-in flood from many addresses)."
    payload_unopenable        = "Batches expired with payload_key_unknown: a member failed to open under its key of ORCA_PUSH_PAYLOAD_KEYS, or no instance holding that key claimed it before its deadline."
    payload_key_not_held      = "Claims that left a batch for another instance: their ring lacks the key that sealed it (a rotation rolling out)."
  }

  # The log lines the counters are read from: stdout of this module's functions.
  counter_lines_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=(${join(" OR ", [for n in values(local.function_names) : "\"${n}\""])})",
    "jsonPayload.message=\"orca_push_counters\"",
  ])

  counter_metric_prefix = "orca_push_"

  # Counter name => its total in PromQL (Cloud Monitoring names logging.googleapis.com/user/NAME
  # logging_googleapis_com:user_NAME, and a distribution's sum NAME_sum). Alerts and the dashboard take
  # sum(increase(X[window])), with "or vector(0)" where a quiet counter (no line carried it) must count as 0.
  counter_promql = { for k in keys(local.counters) : k => "logging_googleapis_com:user_${local.counter_metric_prefix}${k}_sum" }
}

resource "google_logging_metric" "counter" {
  for_each = local.counters

  name        = "${local.counter_metric_prefix}${each.key}"
  description = "orca-push counter ${each.key} (shared/obs): ${each.value}"
  filter      = "${local.counter_lines_filter} AND jsonPayload.${each.key}:*"

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "DISTRIBUTION"
    unit         = "1"
    display_name = "orca-push ${each.key}"
    labels {
      key         = "function"
      value_type  = "STRING"
      description = "The function (Cloud Run service) that counted."
    }
  }
  value_extractor  = "EXTRACT(jsonPayload.${each.key})"
  label_extractors = { function = "EXTRACT(resource.labels.service_name)" }

  # One line carries a minute of one instance: 1, 2, 4, ... 2^19 and beyond.
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 20
      growth_factor      = 2
      scale              = 1
    }
  }

  depends_on = [google_project_service.api]
}

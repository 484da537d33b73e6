# Alert policies: what pages the operator when delivery breaks. Each one's documentation says what it means and the
# first steps; infra/README.md ("Runbook") has the longer version. Thresholds are variables (variables.tf,
# "monitoring"); every policy notifies var.alert_notification_channels (none by default: incidents open in the
# console only).
#
# The gateway's counters are log-based metrics (metrics.tf) queried in PromQL; the platform's own metrics (Cloud
# Tasks, Cloud SQL) use threshold conditions.

locals {
  # sum(increase(COUNTER[window])), 0 when no line carried the counter in the window.
  counter_increase = { for k, m in local.counter_promql : k => "(sum(increase(${m}[WINDOW])) or vector(0))" }

  delivery_failures_10m = join(" + ", [for k in ["delivery_dead", "delivery_error", "delivery_expired"] : replace(local.counter_increase[k], "WINDOW", "10m")])
  delivery_outcomes_10m = "${replace(local.counter_increase["delivery_sent"], "WINDOW", "10m")} + ${local.delivery_failures_10m}"

  runbook = "infra/README.md, \"Runbook\" (in the orca-push repository)"

  alert_promql = {
    delivery_failures = {
      name     = "Delivery failures above ${var.alert_delivery_failure_ratio * 100}% of outcomes"
      severity = "ERROR"
      query    = "(${local.delivery_failures_10m}) / (${local.delivery_outcomes_10m}) > ${var.alert_delivery_failure_ratio}"
      doc      = <<-EOT
        More than ${var.alert_delivery_failure_ratio * 100}% of delivery outcomes in 10 minutes were failures
        (delivery_dead, delivery_error, delivery_expired against delivery_sent): phones are not getting their pushes.

        First steps: on the dashboard, see which failure grows. delivery_dead alone is usually an app build that
        changed its APNs environment or FCM project; delivery_error with the credentials alert is our key; expired
        follows a backlog (see the Cloud Tasks alert). Logs: jsonPayload.message="orca_push_counters".
      EOT
    }
    provider_credentials = {
      name     = "Provider refuses our credentials (APNs 403, FCM 401/403)"
      severity = "CRITICAL"
      query    = "${replace(local.counter_increase["apns_credentials_rejected"], "WINDOW", "5m")} + ${replace(local.counter_increase["fcm_credentials_rejected"], "WINDOW", "5m")} > 0"
      doc      = <<-EOT
        APNs answered 403 with a provider-token or certificate reason (InvalidProviderToken, ExpiredProviderToken,
        MissingProviderToken, BadCertificate...) or FCM answered 401/403: every push to that platform fails.

        First steps: see which counter rose (apns_ or fcm_credentials_rejected). APNs: check the apns-key, apns-key-id
        and apple-team-id secrets against the key in Apple's developer account (revoked? rotated?), add a new
        version and redeploy. FCM: check the runtime service account still has the Firebase Cloud Messaging role on
        ORCA_PUSH_FCM_PROJECT_ID.
      EOT
    }
    late_deliveries = {
      name     = "Deliveries going out more than 30 s late"
      severity = "WARNING"
      query    = "${replace(local.counter_increase["delivery_late_over_30s"], "WINDOW", "15m")} > ${var.alert_late_deliveries}"
      doc      = <<-EOT
        More than ${var.alert_late_deliveries} provider calls in 15 minutes went out over 30 s after their batch was
        due (delivery_late_over_30s): Cloud Tasks dispatches late, deliver is saturated, or the sweep is catching up.

        First steps: check the Cloud Tasks dispatch delay and the deliver function's instance count and latency;
        raise function_instances["deliver"].max or tasks_max_concurrent_dispatches if deliver is at its limit; check database
        503s.
      EOT
    }
    lost_tasks = {
      name     = "Lost delivery tasks re-enqueued by the sweep"
      severity = "WARNING"
      query    = "${replace(local.counter_increase["sweep_rescheduled"], "WINDOW", "30m")} > ${var.alert_sweep_rescheduled}"
      doc      = <<-EOT
        The sweep found due batches with no task and re-enqueued them (sweep_rescheduled): tasks are being lost, so
        those pushes went out up to a minute late.

        First steps: look at schedule_failed (Cloud Tasks create calls failing: quota, IAM of the tasks service
        account, the queue paused); check the queue's state in Cloud Tasks; check deliver's error rate (a task that
        fails past its retry config is dropped).
      EOT
    }
    database_503s = {
      name     = "Requests answered 503 by the database"
      severity = "ERROR"
      query    = "${replace(local.counter_increase["database_busy"], "WINDOW", "5m")} + ${replace(local.counter_increase["database_unavailable"], "WINDOW", "5m")} > ${var.alert_database_503s}"
      doc      = <<-EOT
        More than ${var.alert_database_503s} requests in 5 minutes were answered 503 because the database was busy or
        unreachable (database_busy, database_unavailable). Hosts retry, but sends and deliveries are delayed.

        First steps: Cloud SQL instance state (maintenance, failover), its CPU and connections (the Cloud SQL alert);
        database_unavailable with no load is the connector or IAM (cloudsql.instanceUser of the runtime account);
        database_busy under load wants a larger tier or a smaller database_pool_max x instances.
      EOT
    }
    nothing_sent = {
      name     = "Nothing sent for ${var.alert_absence_minutes} minutes although sends are queued"
      severity = "CRITICAL"
      query    = "(${replace(local.counter_increase["send_queued"], "WINDOW", "${var.alert_absence_minutes}m")} > 0) unless (${replace(local.counter_increase["delivery_sent"], "WINDOW", "${var.alert_absence_minutes}m")} > 0)"
      doc      = <<-EOT
        Hosts had sends queued in the last ${var.alert_absence_minutes} minutes but no provider accepted any batch:
        delivery has stopped.

        First steps: is the deliver function serving (Cloud Run logs, errors)? Is the Cloud Tasks queue running
        (not paused, dispatching)? Is the sweep's Scheduler job running? Then the credentials and failure alerts.
      EOT
    }
    payload_unopenable = {
      name     = "Alerts lost: payload key unknown"
      severity = "ERROR"
      query    = "${replace(local.counter_increase["payload_unopenable"], "WINDOW", "15m")} > ${var.alert_payload_unopenable}"
      doc      = <<-EOT
        More than ${var.alert_payload_unopenable} batches in 15 minutes ended expired with reason payload_key_unknown
        (payload_unopenable): alerts that were answered queued were never sent. Either no instance that claimed
        them held the key that sealed them until their deadline (a key dropped from ORCA_PUSH_PAYLOAD_KEYS, or
        sealing with a key not yet everywhere), or their stored bytes do not open under their key.

        First steps: workflows/payload-keys.sh status (every function on one revision with the same ring?);
        payload_key_not_held on the counter lines says instances are meeting keys they lack. If a key was dropped
        or a seal step applied early, pin the previous ring version again in secret_versions and apply. Otherwise
        suspect the rows themselves (a restore, a manual edit).
      EOT
    }
  }
}

resource "google_monitoring_alert_policy" "counter" {
  for_each = local.alert_promql

  display_name          = "orca-push: ${each.value.name}"
  combiner              = "OR"
  severity              = each.value.severity
  notification_channels = var.alert_notification_channels

  conditions {
    display_name = each.value.name
    condition_prometheus_query_language {
      query               = each.value.query
      duration            = "0s"
      evaluation_interval = "60s"
    }
  }

  documentation {
    subject   = "orca-push: ${each.value.name}"
    mime_type = "text/markdown"
    content   = "${each.value.doc}\nRunbook: ${local.runbook}"
  }

  alert_strategy {
    auto_close = "1800s"
  }

  depends_on = [google_logging_metric.counter]
}

resource "google_monitoring_alert_policy" "tasks_dispatch_delay" {
  display_name          = "orca-push: Cloud Tasks dispatches late"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.alert_notification_channels

  conditions {
    display_name = "deliver queue p99 dispatch delay above ${var.alert_tasks_dispatch_delay_seconds} s"
    condition_threshold {
      filter          = "resource.type=\"cloud_tasks_queue\" AND ${local.tasks_queue_filter} AND metric.type=\"cloudtasks.googleapis.com/queue/task_attempt_delays\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.alert_tasks_dispatch_delay_seconds * 1000 # the metric is in ms
      duration        = "300s"
      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_PERCENTILE_99"
      }
    }
  }

  documentation {
    subject   = "orca-push: Cloud Tasks dispatches late"
    mime_type = "text/markdown"
    content   = <<-EOT
      The deliver queue's tasks are dispatched over ${var.alert_tasks_dispatch_delay_seconds} s after their scheduled
      time (p99, 5 minutes): the queue has a backlog its rate limits cannot drain, or deliver answers slowly or with
      errors, so that tasks wait for their retries.

      First steps: Cloud Tasks console, queues ${join(", ", local.tasks_queue_names)}: tasks count, oldest task,
      dispatch rate against tasks_max_dispatches_per_second / tasks_max_concurrent_dispatches. Check deliver's
      errors and instance count. Do not purge the queue: the batches are in the database, and the sweep re-enqueues
      due batches whose task is gone.

      Runbook: ${local.runbook}
    EOT
  }
}

resource "google_monitoring_alert_policy" "sql_saturation" {
  display_name          = "orca-push: Cloud SQL CPU or connections near the limit"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.alert_notification_channels

  conditions {
    display_name = "CPU above ${var.alert_sql_cpu_utilization * 100}%"
    condition_threshold {
      filter          = "resource.type=\"cloudsql_database\" AND resource.labels.database_id=\"${var.project_id}:${google_sql_database_instance.main.name}\" AND metric.type=\"cloudsql.googleapis.com/database/cpu/utilization\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.alert_sql_cpu_utilization
      duration        = "600s"
      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_MEAN"
      }
    }
  }

  conditions {
    display_name = "more than ${var.alert_sql_connections} connections"
    condition_threshold {
      filter          = "resource.type=\"cloudsql_database\" AND resource.labels.database_id=\"${var.project_id}:${google_sql_database_instance.main.name}\" AND metric.type=\"cloudsql.googleapis.com/database/postgresql/num_backends\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.alert_sql_connections
      duration        = "600s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_MEAN"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    subject   = "orca-push: Cloud SQL CPU or connections near the limit"
    mime_type = "text/markdown"
    content   = <<-EOT
      The Cloud SQL instance ${google_sql_database_instance.main.name} has run above ${var.alert_sql_cpu_utilization * 100}%
      CPU or ${var.alert_sql_connections} connections for 10 minutes. Next come slow requests and database 503s.

      First steps: Query Insights for the top statements; connections are instances x database_pool_max (each
      function's instances count): lower the pool or the max instances, or resize the tier (sql_tier, a restart
      of a few minutes with failover to the standby).

      Runbook: ${local.runbook}
    EOT
  }
}

# One dashboard with the series the alerts watch (alerts.tf): deliveries by outcome, lateness, provider credentials,
# admission, database 503s, lost tasks, and the platform's own Cloud Tasks and Cloud SQL metrics.

locals {
  # Title => the counters it draws, each as its increase per 5 minutes, summed over functions.
  dashboard_counter_charts = [
    { title = "Deliveries by outcome (per 5 min)", counters = ["delivery_sent", "delivery_dead", "delivery_error", "delivery_expired", "delivery_dropped", "delivery_retry"] },
    { title = "Provider calls by lateness after due (per 5 min)", counters = ["delivery_late_1s", "delivery_late_5s", "delivery_late_30s", "delivery_late_over_30s"] },
    { title = "Alert batches by acceptance-to-provider time (per 5 min)", counters = ["alert_latency_1s", "alert_latency_5s", "alert_latency_30s", "alert_latency_over_30s"] },
    { title = "Provider credential refusals (per 5 min)", counters = ["apns_credentials_rejected", "fcm_credentials_rejected"] },
    { title = "Send recipients at admission (per 5 min)", counters = ["send_queued", "send_dead", "send_rate_limited", "send_error"] },
    { title = "Database 503s and internal errors (per 5 min)", counters = ["database_busy", "database_unavailable", "request_error", "sweep_cut_off"] },
    { title = "Lost tasks: sweep re-enqueued, schedule failed (per 5 min)", counters = ["sweep_rescheduled", "schedule_failed"] },
    { title = "Hosts and devices (per 5 min)", counters = ["challenge_issued", "challenge_rejected", "session_issued", "session_rejected", "ip_rate_limited", "device_registered", "device_rejected", "device_deleted", "receipts_read"] },
  ]

  dashboard_platform_charts = [
    {
      title  = "Cloud Tasks: deliver queue p99 dispatch delay (ms)"
      filter = "resource.type=\"cloud_tasks_queue\" AND ${local.tasks_queue_filter} AND metric.type=\"cloudtasks.googleapis.com/queue/task_attempt_delays\""
      align  = "ALIGN_PERCENTILE_99"
    },
    {
      title  = "Cloud Tasks: deliver queue depth"
      filter = "resource.type=\"cloud_tasks_queue\" AND ${local.tasks_queue_filter} AND metric.type=\"cloudtasks.googleapis.com/queue/depth\""
      align  = "ALIGN_MEAN"
    },
    {
      title  = "Cloud SQL: CPU utilization"
      filter = "resource.type=\"cloudsql_database\" AND resource.labels.database_id=\"${var.project_id}:${google_sql_database_instance.main.name}\" AND metric.type=\"cloudsql.googleapis.com/database/cpu/utilization\""
      align  = "ALIGN_MEAN"
    },
    {
      title  = "Cloud SQL: connections (backends)"
      filter = "resource.type=\"cloudsql_database\" AND resource.labels.database_id=\"${var.project_id}:${google_sql_database_instance.main.name}\" AND metric.type=\"cloudsql.googleapis.com/database/postgresql/num_backends\""
      align  = "ALIGN_MEAN"
    },
  ]

  dashboard_charts = concat(
    [for c in local.dashboard_counter_charts : {
      title = c.title
      xyChart = {
        dataSets = [for k in c.counters : {
          plotType           = "LINE"
          legendTemplate     = k
          timeSeriesQuery    = { prometheusQuery = "sum(increase(${local.counter_promql[k]}[5m]))" }
          minAlignmentPeriod = "60s"
        }]
      }
    }],
    [for c in local.dashboard_platform_charts : {
      title = c.title
      xyChart = {
        dataSets = [{
          plotType = "LINE"
          timeSeriesQuery = {
            timeSeriesFilter = {
              filter      = c.filter
              aggregation = { alignmentPeriod = "60s", perSeriesAligner = c.align }
            }
          }
        }]
      }
    }],
  )
}

resource "google_monitoring_dashboard" "gateway" {
  dashboard_json = jsonencode({
    displayName = "orca-push gateway"
    mosaicLayout = {
      columns = 48
      tiles = [for i, w in local.dashboard_charts : {
        xPos   = (i % 2) * 24
        yPos   = floor(i / 2) * 16
        width  = 24
        height = 16
        widget = w
      }]
    }
  })

  depends_on = [google_logging_metric.counter]
}

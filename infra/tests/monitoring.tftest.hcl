# Plan-time assertions over the monitoring (metrics.tf, alerts.tf, dashboard.tf, logging.tf): the notification
# channel variable and the thresholds reach every policy, and bad values are refused. Mocked google provider; run by
# workflows/check-infra.sh with -var-file=environments/production.tfvars.

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

run "defaults" {
  command = apply

  assert {
    condition     = length(google_monitoring_alert_policy.counter) + 2 >= 5
    error_message = "at least five alert policies"
  }

  assert {
    condition = alltrue(concat(
      [for p in google_monitoring_alert_policy.counter : length(coalesce(p.notification_channels, [])) == 0],
      [length(coalesce(google_monitoring_alert_policy.tasks_dispatch_delay.notification_channels, [])) == 0],
      [length(coalesce(google_monitoring_alert_policy.sql_saturation.notification_channels, [])) == 0],
    ))
    error_message = "by default no policy notifies a channel"
  }

  assert {
    condition = alltrue(concat(
      [for p in google_monitoring_alert_policy.counter : length(p.documentation[0].content) > 100],
      [length(google_monitoring_alert_policy.tasks_dispatch_delay.documentation[0].content) > 100],
      [length(google_monitoring_alert_policy.sql_saturation.documentation[0].content) > 100],
    ))
    error_message = "every policy says what it means and the first steps"
  }

  assert {
    condition = (
      endswith(google_monitoring_alert_policy.counter["delivery_failures"].conditions[0].condition_prometheus_query_language[0].query, "> 0.05") &&
      endswith(google_monitoring_alert_policy.counter["late_deliveries"].conditions[0].condition_prometheus_query_language[0].query, "> 10") &&
      endswith(google_monitoring_alert_policy.counter["lost_tasks"].conditions[0].condition_prometheus_query_language[0].query, "> 0") &&
      endswith(google_monitoring_alert_policy.counter["database_503s"].conditions[0].condition_prometheus_query_language[0].query, "> 20") &&
      strcontains(google_monitoring_alert_policy.counter["nothing_sent"].conditions[0].condition_prometheus_query_language[0].query, "[30m]") &&
      endswith(google_monitoring_alert_policy.counter["payload_unopenable"].conditions[0].condition_prometheus_query_language[0].query, "> 0") &&
      google_monitoring_alert_policy.tasks_dispatch_delay.conditions[0].condition_threshold[0].threshold_value == 60000 &&
      google_monitoring_alert_policy.sql_saturation.conditions[0].condition_threshold[0].threshold_value == 0.8 &&
      google_monitoring_alert_policy.sql_saturation.conditions[1].condition_threshold[0].threshold_value == 80
    )
    error_message = "the default thresholds must reach the conditions"
  }

  assert {
    condition     = strcontains(google_monitoring_alert_policy.counter["provider_credentials"].conditions[0].condition_prometheus_query_language[0].query, "logging_googleapis_com:user_orca_push_apns_credentials_rejected_sum")
    error_message = "the credentials alert must read the counter's log-based metric"
  }

  assert {
    condition     = strcontains(google_monitoring_alert_policy.counter["payload_unopenable"].conditions[0].condition_prometheus_query_language[0].query, "logging_googleapis_com:user_orca_push_payload_unopenable_sum[15m]")
    error_message = "the lost-alerts alert must read payload_unopenable's log-based metric over 15 minutes"
  }

  assert {
    condition = alltrue([for k, m in google_logging_metric.counter :
      m.name == "orca_push_${k}" && m.value_extractor == "EXTRACT(jsonPayload.${k})" &&
      strcontains(m.filter, "jsonPayload.message=\"orca_push_counters\"") && strcontains(m.filter, "\"orca-cloud-push-deliver\"")
    ])
    error_message = "each counter metric extracts its counter from the functions' counter lines"
  }

  assert {
    condition     = length(google_logging_project_exclusion.request_logs) == 1 && strcontains(google_logging_project_exclusion.request_logs[0].filter, "sample(insertId, 0.99)") && strcontains(google_logging_project_exclusion.request_logs[0].filter, "log_id(\"run.googleapis.com/requests\")")
    error_message = "production (request_logs_kept_ratio 0.01, issue 31 §2) excludes 99% of the request logs, and only those"
  }

  assert {
    condition     = length(jsondecode(google_monitoring_dashboard.gateway.dashboard_json).mosaicLayout.tiles) == 12
    error_message = "the dashboard has its twelve charts"
  }
}

run "channels_and_thresholds" {
  command = apply

  variables {
    alert_notification_channels        = ["projects/onorca-cloud/notificationChannels/123", "projects/onorca-cloud/notificationChannels/456"]
    alert_delivery_failure_ratio       = 0.2
    alert_late_deliveries              = 3
    alert_sweep_rescheduled            = 5
    alert_database_503s                = 100
    alert_tasks_dispatch_delay_seconds = 120
    alert_sql_cpu_utilization          = 0.9
    alert_sql_connections              = 150
    alert_absence_minutes              = 60
    alert_payload_unopenable           = 2
    request_logs_kept_ratio            = 1
  }

  assert {
    condition = alltrue(concat(
      [for p in google_monitoring_alert_policy.counter : p.notification_channels == tolist(var.alert_notification_channels)],
      [google_monitoring_alert_policy.tasks_dispatch_delay.notification_channels == tolist(var.alert_notification_channels)],
      [google_monitoring_alert_policy.sql_saturation.notification_channels == tolist(var.alert_notification_channels)],
    ))
    error_message = "every policy must notify the channels of alert_notification_channels"
  }

  assert {
    condition = (
      endswith(google_monitoring_alert_policy.counter["delivery_failures"].conditions[0].condition_prometheus_query_language[0].query, "> 0.2") &&
      endswith(google_monitoring_alert_policy.counter["late_deliveries"].conditions[0].condition_prometheus_query_language[0].query, "> 3") &&
      endswith(google_monitoring_alert_policy.counter["lost_tasks"].conditions[0].condition_prometheus_query_language[0].query, "> 5") &&
      endswith(google_monitoring_alert_policy.counter["database_503s"].conditions[0].condition_prometheus_query_language[0].query, "> 100") &&
      strcontains(google_monitoring_alert_policy.counter["nothing_sent"].conditions[0].condition_prometheus_query_language[0].query, "[60m]") &&
      endswith(google_monitoring_alert_policy.counter["payload_unopenable"].conditions[0].condition_prometheus_query_language[0].query, "> 2") &&
      google_monitoring_alert_policy.tasks_dispatch_delay.conditions[0].condition_threshold[0].threshold_value == 120000 &&
      google_monitoring_alert_policy.sql_saturation.conditions[0].condition_threshold[0].threshold_value == 0.9 &&
      google_monitoring_alert_policy.sql_saturation.conditions[1].condition_threshold[0].threshold_value == 150
    )
    error_message = "each threshold variable must reach its condition"
  }

  assert {
    condition     = length(google_logging_project_exclusion.request_logs) == 0
    error_message = "request_logs_kept_ratio = 1 keeps every request log: no exclusion"
  }
}

run "channel_must_be_a_full_name" {
  command = plan
  variables {
    alert_notification_channels = ["123"]
  }
  expect_failures = [var.alert_notification_channels]
}

run "failure_ratio_must_be_a_share" {
  command = plan
  variables {
    alert_delivery_failure_ratio = 1.5
  }
  expect_failures = [var.alert_delivery_failure_ratio]
}

run "kept_ratio_must_be_a_share" {
  command = plan
  variables {
    request_logs_kept_ratio = -0.1
  }
  expect_failures = [var.request_logs_kept_ratio]
}

run "payload_unopenable_threshold_must_be_a_count" {
  command = plan
  variables {
    alert_payload_unopenable = -1
  }
  expect_failures = [var.alert_payload_unopenable]
}

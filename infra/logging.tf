# Cloud Run writes one request log entry (run.googleapis.com/requests) per request to every function; at volume they
# cost about as much as Cloud Tasks per push. The exclusion drops all but var.request_logs_kept_ratio of them at
# ingestion (sample() keeps a random share by insertId). The gateway's own lines (stdout: counters, errors) are never
# excluded, and log-based metrics count excluded entries anyway.

resource "google_logging_project_exclusion" "request_logs" {
  count = var.request_logs_kept_ratio < 1 ? 1 : 0

  name        = "${var.name_prefix}-request-logs"
  description = "Keep ${var.request_logs_kept_ratio * 100}% of the orca-push functions' Cloud Run request logs (variable request_logs_kept_ratio)."
  filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "log_id(\"run.googleapis.com/requests\")",
    "resource.labels.service_name=(${join(" OR ", [for n in values(local.function_names) : "\"${n}\""])})",
    "sample(insertId, ${1 - var.request_logs_kept_ratio})",
  ])

  depends_on = [google_project_service.api]
}

# Cloud Tasks: send (and deliver/sweep, for retries and lost tasks) schedule one task per due batch; the queue calls
# deliver. Cloud Scheduler calls sweep every minute.

# The delivery queues: tasks_queue_count of them, each under the same limits. The first keeps the name the one queue
# always had (and its state address moves, below), so going from 1 to N queues recreates nothing: the tasks on it
# keep draining, and the gateway spreads new ones over every queue by a hash of their registration.
resource "google_cloud_tasks_queue" "deliver" {
  count    = var.tasks_queue_count
  name     = count.index == 0 ? "${var.name_prefix}-deliver" : format("%s-deliver-%02d", var.name_prefix, count.index)
  location = var.region

  rate_limits {
    max_dispatches_per_second = var.tasks_max_dispatches_per_second
    max_concurrent_dispatches = var.tasks_max_concurrent_dispatches
  }

  # deliver schedules its own provider retries as new tasks and answers 2xx for every outcome it recorded (sent,
  # dead, retry scheduled, expired, stale or early task). A Cloud Tasks retry therefore only happens on an unexpected
  # failure: a non-2xx (database outage, crash) or no answer within the task's 30 s dispatch deadline (set per task
  # by the gateway; the batch lease is also 30 s, so a retry never races a live attempt for long). Retry fast at
  # first, then every 30 s: 1, 2, 4, 8, 16, 30, 30 ... s. Cloud Tasks stops once both limits are spent: 20 attempts
  # take about 8 minutes and the 10 minute duration bounds it, past the 5 minute lifetime of any event, after which
  # deliver only expires the batch. sweep re-enqueues due batches whose task is gone, so giving up loses nothing.
  retry_config {
    min_backoff        = "1s"
    max_backoff        = "30s"
    max_doublings      = 5
    max_attempts       = 20
    max_retry_duration = "600s"
  }

  # Whatever URL or token a task names, this queue only ever calls deliver, with an OIDC token for the tasks
  # service account (the gateway sets the same values from ORCA_PUSH_DELIVER_URL / _TASKS_SERVICE_ACCOUNT).
  http_target {
    uri_override {
      scheme                    = "HTTPS"
      host                      = trimprefix(local.deliver_url, "https://")
      uri_override_enforce_mode = "ALWAYS"
    }
    oidc_token {
      service_account_email = google_service_account.tasks.email
      audience              = local.deliver_url
    }
  }

  lifecycle {
    precondition {
      condition     = local.tasks_queues_advertised <= var.tasks_queue_count
      error_message = "tasks_queues_advertised (${local.tasks_queues_advertised}) names queues that tasks_queue_count (${var.tasks_queue_count}) does not make"
    }
    # In a provider outage every push becomes a retry (inline delivery puts none on a queue otherwise): the queues
    # together must dispatch at least one retry per push of the peak, or their backlog outgrows the events' 5 minute
    # lifetime (infra/README.md, "Capacity and cost"). One queue dispatches at most 500 a second.
    precondition {
      condition     = var.tasks_max_dispatches_per_second <= 500 && var.tasks_queue_count * var.tasks_max_dispatches_per_second >= var.capacity_peak_pushes_per_second
      error_message = "${var.tasks_queue_count} queues x ${var.tasks_max_dispatches_per_second}/s (at most 500 each) cannot take a retry of each of ${var.capacity_peak_pushes_per_second} pushes a second: add queues (tasks_queue_count)"
    }
    # Every dispatch in flight needs a deliver slot (concurrency 80 per instance), or Cloud Tasks' calls queue
    # behind Cloud Run's 429s.
    precondition {
      condition     = var.tasks_queue_count * var.tasks_max_concurrent_dispatches <= var.request_concurrency * var.function_instances["deliver"].max
      error_message = "${var.tasks_queue_count} queues x ${var.tasks_max_concurrent_dispatches} in flight exceed deliver's ${var.function_instances["deliver"].max} instances x ${var.request_concurrency}"
    }
  }

  depends_on = [google_project_service.api]
}

resource "google_cloud_scheduler_job" "sweep" {
  name             = "${var.name_prefix}-sweep"
  region           = var.region
  description      = "Prune expired rows and re-enqueue due batches whose task was lost."
  schedule         = "* * * * *"
  time_zone        = "Etc/UTC"
  attempt_deadline = "60s"

  # The next run is a minute away: no retries that would overlap it.
  retry_config {
    retry_count = 0
  }

  http_target {
    http_method = "POST"
    uri         = local.sweep_url
    oidc_token {
      service_account_email = google_service_account.scheduler.email
      audience              = local.sweep_url
    }
  }

  depends_on = [google_cloud_run_v2_service_iam_member.private_invoker]
}

moved {
  from = google_cloud_tasks_queue.deliver
  to   = google_cloud_tasks_queue.deliver[0]
}

variable "project_id" {
  description = "Google Cloud project that runs the gateway (onorca-cloud in production)."
  type        = string
}

variable "region" {
  description = "Region of the functions, Cloud SQL, the Cloud Tasks queue, the Scheduler job and the serverless NEGs."
  type        = string
  default     = "us-central1"
}

variable "name_prefix" {
  description = "Prefix of every resource name this module creates (functions, queue, instance, load balancer parts)."
  type        = string
  default     = "orca-cloud-push"
}

variable "public_hostname" {
  description = "Hostname the load balancer and its managed certificate serve (contract: push.onorca.dev)."
  type        = string
}

variable "runtime_service_account_id" {
  description = "Account id of the existing runtime service account (orca-cloud-push), imported in imports.tf."
  type        = string
  default     = "orca-cloud-push"
}

variable "deployer_service_account_email" {
  description = "Email of the deployer service account that GitHub Actions impersonates through Workload Identity Federation (made by the bootstrap, README.md)."
  type        = string
}

variable "bootstrap_source_object" {
  description = "Object in the deploy bucket holding the source zip the functions are first created from. Only read on creation: afterwards the deploy workflow owns the code (see lifecycle in functions.tf)."
  type        = string
}

variable "function_instances" {
  description = "Minimum and maximum instances of each of the seven functions, by name (host-challenge, host-session, devices, send, receipts, deliver, sweep). A minimum instance is billed while idle (about $10 a month at Cloud Run's idle rate): keep one only where a cold start on the user's path is not acceptable (send). The maxima bound the connections (database.tf) and the deliver calls in flight (tasks.tf); infra/README.md, \"Capacity and cost\", gives them for 1 M, 10 M and 100 M pushes a day."
  type = map(object({
    min = number
    max = number
  }))

  validation {
    condition = (
      sort(keys(var.function_instances)) == sort(["host-challenge", "host-session", "devices", "send", "receipts", "deliver", "sweep"]) &&
      alltrue([for k, v in var.function_instances : v.min >= 0 && v.max >= 1 && v.min <= v.max && floor(v.min) == v.min && floor(v.max) == v.max])
    )
    error_message = "function_instances must name exactly the seven functions, each with whole numbers 0 <= min <= max, max >= 1"
  }
}

variable "capacity_peak_pushes_per_second" {
  description = "The peak push rate the settings are sized for (5x the day's average: 58 for 1 M pushes a day, 580 for 10 M, 5,800 for 100 M). Preconditions check the queues' dispatch rate (an outage turns every push into a retry), send's instances and the VPC connector's throughput against it (infra/README.md, \"Capacity and cost\")."
  type        = number
  default     = 58
  validation {
    condition     = var.capacity_peak_pushes_per_second > 0
    error_message = "pushes a second, more than 0"
  }
}

variable "request_concurrency" {
  description = "Concurrent requests per function instance."
  type        = number
  default     = 80
}

variable "apns_topic" {
  description = "ORCA_PUSH_APNS_TOPIC: the iOS bundle id APNs pushes are addressed to."
  type        = string
  default     = "com.stably.orca.mobile"
}

variable "fcm_project_id" {
  description = "ORCA_PUSH_FCM_PROJECT_ID: the Firebase project FCM v1 sends through."
  type        = string
  default     = "onorca-cloud"
}

variable "coalesce_ms" {
  description = "ORCA_PUSH_COALESCE_MS: the per-registration coalescing window in milliseconds."
  type        = number
  default     = 3000
}

variable "deliver_inline" {
  description = "ORCA_PUSH_DELIVER_INLINE: deliver a batch due at once (no coalescing window, a dismissal, a sealed alert) within the send request that made it due, with a Cloud Task only for what must wait (a window, a retry, a held-back batch); the sweep recovers a batch whose send died mid-delivery. A push then costs one function request and no task operation instead of two of each. The send function needs the provider credentials, which every function gets."
  type        = bool
  default     = false
}

variable "fcm_message" {
  description = "ORCA_PUSH_FCM_MESSAGE: the FCM message form, notification (the contract's, for the phones it was written for; sealed alerts still go data-only) or data (every Android send data-only, for today's Orca phones; pair it with coalesce_ms = 0)."
  type        = string
  default     = "notification"

  validation {
    condition     = contains(["notification", "data"], var.fcm_message)
    error_message = "fcm_message must be notification or data (the gateway refuses to start on anything else)."
  }
}

variable "database_pool_max" {
  description = "ORCA_PUSH_DATABASE_POOL_MAX: connections per instance. Instances x pool must stay under the instance's max_connections."
  type        = number
  default     = 10
}

variable "sql_tier" {
  description = "Machine tier of the Cloud SQL instance (for example db-custom-1-3840)."
  type        = string
}

variable "sql_database_version" {
  description = "PostgreSQL major version of the Cloud SQL instance."
  type        = string
  default     = "POSTGRES_16"
}

variable "sql_public_ip_for_rollouts" {
  description = "Give the instance a public IP (no authorized networks, connector-only, IAM login) so the deploy workflow's Cloud SQL Auth Proxy can run migrations from a GitHub-hosted runner. The functions always use the private IP."
  type        = bool
  default     = true
}

variable "sql_deletion_protection" {
  description = "Refuse to destroy the Cloud SQL instance (Terraform and API level)."
  type        = bool
  default     = true
}

variable "network_psa_prefix_length" {
  description = "Prefix length of the range reserved for private services access (Cloud SQL private IP)."
  type        = number
  default     = 20
}

variable "vpc_connector_cidr" {
  description = "A free /28 for the Serverless VPC Access connector the functions reach Cloud SQL's private IP through."
  type        = string
  default     = "10.8.0.0/28"
}

variable "vpc_connector_machine_type" {
  description = "Machine type of the Serverless VPC Access connector's instances (f1-micro, e2-micro or e2-standard-4): about 100, 100 and 1,600 Mbps each (cloud.google.com/vpc/docs/serverless-vpc-access, \"Throughput\"). Every database byte of every function goes through it."
  type        = string
  default     = "e2-micro"
  validation {
    condition     = contains(["f1-micro", "e2-micro", "e2-standard-4"], var.vpc_connector_machine_type)
    error_message = "f1-micro, e2-micro or e2-standard-4 (the types the connector takes)"
  }
}

variable "vpc_connector_min_instances" {
  description = "Minimum instances of the VPC connector (2..9); they run, and are billed, all the time."
  type        = number
  default     = 2
  validation {
    condition     = var.vpc_connector_min_instances >= 2 && var.vpc_connector_min_instances <= 9
    error_message = "2..9 instances (and below vpc_connector_max_instances)"
  }
}

variable "vpc_connector_max_instances" {
  description = "Maximum instances of the VPC connector (3..10, above the minimum). The connector scales out under load and never back in."
  type        = number
  default     = 3
  validation {
    condition     = var.vpc_connector_max_instances >= 3 && var.vpc_connector_max_instances <= 10
    error_message = "3..10 instances"
  }
}

variable "sql_disk_type" {
  description = "Cloud SQL disk type: PD_SSD (IOPS scale with size) or PD_HDD."
  type        = string
  default     = "PD_SSD"
  validation {
    condition     = contains(["PD_SSD", "PD_HDD"], var.sql_disk_type)
    error_message = "PD_SSD or PD_HDD"
  }
}

variable "sql_disk_size_gb" {
  description = "Cloud SQL disk size in GB (at least 10). On PD_SSD it sets the IOPS and throughput the WAL and checkpoints get (about 30 IOPS and 0.48 MB/s per GB). Autoresize still grows it; set it at or above the current size, never below (a disk cannot shrink)."
  type        = number
  default     = 10
  validation {
    condition     = var.sql_disk_size_gb >= 10 && floor(var.sql_disk_size_gb) == var.sql_disk_size_gb
    error_message = "whole GB, at least 10"
  }
}

variable "tasks_queue_count" {
  description = "Delivery queues (1..32). One queue dispatches at most 500 tasks a second; the gateway spreads tasks over the queues by a hash of their registration, so one phone's tasks stay in one. Raising it recreates nothing (the first queue keeps its name); lowering it strands the tasks on the queues dropped, which the sweep re-enqueues within a minute or two (infra/README.md, \"Queues\")."
  type        = number
  default     = 1

  validation {
    condition     = var.tasks_queue_count >= 1 && var.tasks_queue_count <= 32 && floor(var.tasks_queue_count) == var.tasks_queue_count
    error_message = "tasks_queue_count must be a whole number in 1..32 (the gateway refuses more queues)."
  }
}

variable "tasks_queues_advertised" {
  description = "How many of the tasks_queue_count queues the functions are told of (ORCA_PUSH_TASKS_QUEUE lists the first this many); null: all of them. A queue count change is then one apply per runbook step (infra/README.md, \"Queues\"): to lower the count, first advertise the lower number (the old queues drain), then lower tasks_queue_count."
  type        = number
  default     = null
  validation {
    condition     = var.tasks_queues_advertised == null ? true : (var.tasks_queues_advertised >= 1 && floor(var.tasks_queues_advertised) == var.tasks_queues_advertised)
    error_message = "null, or a whole number of queues, at least 1 (and at most tasks_queue_count: see the queue's precondition)"
  }
}

variable "tasks_max_dispatches_per_second" {
  description = "Cloud Tasks rate limit per queue: task dispatches per second to deliver (at most 500)."
  type        = number
}

variable "tasks_max_concurrent_dispatches" {
  description = "Cloud Tasks rate limit per queue: deliver calls in flight at once. Times tasks_queue_count it must stay within function_instances[\"deliver\"].max x request_concurrency (a precondition in tasks.tf)."
  type        = number
}

# --- monitoring (alerts.tf, dashboard.tf, logging.tf) ----------------------------------------------------------------

variable "alert_notification_channels" {
  description = "Notification channels (projects/PROJECT/notificationChannels/ID) every alert policy notifies. Empty: incidents open in the console only, nobody is paged."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for c in var.alert_notification_channels : can(regex("^projects/[^/]+/notificationChannels/[^/]+$", c))])
    error_message = "each channel must be a full name, projects/PROJECT/notificationChannels/ID"
  }
}

variable "alert_delivery_failure_ratio" {
  description = "Alert when delivery failures (dead, error, expired) exceed this share of delivery outcomes in 10 minutes."
  type        = number
  default     = 0.05
  validation {
    condition     = var.alert_delivery_failure_ratio > 0 && var.alert_delivery_failure_ratio < 1
    error_message = "a share between 0 and 1, exclusive"
  }
}

variable "alert_late_deliveries" {
  description = "Alert when more provider calls than this went out more than 30 s after their batch was due, in 15 minutes."
  type        = number
  default     = 10
  validation {
    condition     = var.alert_late_deliveries >= 0
    error_message = "a count, 0 or more"
  }
}

variable "alert_sweep_rescheduled" {
  description = "Alert when the sweep re-enqueues more lost tasks than this in 30 minutes (0: any lost task)."
  type        = number
  default     = 0
  validation {
    condition     = var.alert_sweep_rescheduled >= 0
    error_message = "a count, 0 or more"
  }
}

variable "alert_database_503s" {
  description = "Alert when more requests than this are answered 503 because of the database (busy or unavailable) in 5 minutes."
  type        = number
  default     = 20
  validation {
    condition     = var.alert_database_503s >= 0
    error_message = "a count, 0 or more"
  }
}

variable "alert_tasks_dispatch_delay_seconds" {
  description = "Alert when the deliver queue's 99th percentile delay between a task's scheduled time and its dispatch exceeds this, for 5 minutes."
  type        = number
  default     = 60
  validation {
    condition     = var.alert_tasks_dispatch_delay_seconds > 0
    error_message = "seconds, more than 0"
  }
}

variable "alert_sql_cpu_utilization" {
  description = "Alert when the Cloud SQL instance's mean CPU utilization exceeds this share for 10 minutes."
  type        = number
  default     = 0.8
  validation {
    condition     = var.alert_sql_cpu_utilization > 0 && var.alert_sql_cpu_utilization <= 1
    error_message = "a share between 0 (exclusive) and 1"
  }
}

variable "alert_sql_connections" {
  description = "Alert when the Cloud SQL instance holds more connections (backends) than this for 10 minutes: set it near 80% of its max_connections (SHOW max_connections)."
  type        = number
  default     = 80
  validation {
    condition     = var.alert_sql_connections > 0
    error_message = "a count, more than 0"
  }
}

variable "alert_absence_minutes" {
  description = "Alert when sends were queued but no batch was sent for this many minutes."
  type        = number
  default     = 30
  validation {
    condition     = var.alert_absence_minutes >= 5 && floor(var.alert_absence_minutes) == var.alert_absence_minutes
    error_message = "whole minutes, at least 5"
  }
}

variable "alert_payload_unopenable" {
  description = "Alert when more than this many batches in 15 minutes expired with payload_key_unknown (alerts lost to a key). 0: any."
  type        = number
  default     = 0
  validation {
    condition     = var.alert_payload_unopenable >= 0 && floor(var.alert_payload_unopenable) == var.alert_payload_unopenable
    error_message = "a whole number, at least 0"
  }
}

variable "request_logs_kept_ratio" {
  description = "Share of the functions' Cloud Run request logs (run.googleapis.com/requests) kept in the log bucket; the rest are excluded at ingestion. 1 keeps all (no exclusion). At volume they cost about as much as Cloud Tasks per push. Counters are stdout lines and are never excluded."
  type        = number
  default     = 0.1
  validation {
    condition     = var.request_logs_kept_ratio >= 0 && var.request_logs_kept_ratio <= 1
    error_message = "a share between 0 and 1"
  }
}

variable "lb_log_sample_rate" {
  description = "Share of the load balancer's requests it logs (backend services' log_config.sample_rate). Every push is a request: at 1 they cost about $0.5 per million pushes in Cloud Logging ingestion, and Cloud Run's own request logs already record them. 0 turns the load balancer's logging off."
  type        = number
  default     = 0.01
  validation {
    condition     = var.lb_log_sample_rate >= 0 && var.lb_log_sample_rate <= 1
    error_message = "a share between 0 and 1"
  }
}

# --- keys (secrets.tf, functions.tf; README "Payload keys") ---------------------------------------------------------

variable "secret_versions" {
  description = "Secret Manager version each function revision mounts, by secret: apns-key, apns-key-id, apple-team-id, payload-keys, digest-key. A secret not listed mounts \"latest\", read when each instance starts. Pin payload-keys (and digest-key) so that every instance of a revision holds the same ring: a rotation's steps are then applies (README \"Payload keys\")."
  type        = map(string)
  default     = {}
  validation {
    condition = alltrue([for k, v in var.secret_versions :
    contains(["apns-key", "apns-key-id", "apple-team-id", "payload-keys", "digest-key"], k) && can(regex("^([1-9][0-9]*|latest)$", v))])
    error_message = "keys among apns-key, apns-key-id, apple-team-id, payload-keys, digest-key; values a version number or \"latest\""
  }
}

variable "payload_seal_key_id" {
  description = "ORCA_PUSH_PAYLOAD_SEAL_KEY: the id of the payload ring's key that seals; the others only open. Empty: the ring's first key seals. A rotation's step 2 sets it to the new key's id once every instance holds that key (README \"Payload keys\")."
  type        = string
  default     = ""
  validation {
    condition     = var.payload_seal_key_id == "" || can(regex("^[A-Za-z0-9_-]{1,32}$", var.payload_seal_key_id))
    error_message = "empty, or a key id: 1..32 letters, digits, '-' or '_'"
  }
}

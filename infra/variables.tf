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

variable "public_min_instances" {
  description = "Minimum instances of each public function (host-challenge, host-session, devices, send, receipts)."
  type        = number
}

variable "public_max_instances" {
  description = "Maximum instances of each public function."
  type        = number
}

variable "deliver_max_instances" {
  description = "Maximum instances of the deliver function. With concurrency 80 this must cover tasks_max_concurrent_dispatches."
  type        = number
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

variable "tasks_queue_count" {
  description = "Delivery queues (1..32). One queue dispatches at most 500 tasks a second; the gateway spreads tasks over the queues by a hash of their registration, so one phone's tasks stay in one. Raising it recreates nothing (the first queue keeps its name); lowering it strands the tasks on the queues dropped, which the sweep re-enqueues within a minute or two (infra/README.md, \"Queues\")."
  type        = number
  default     = 1

  validation {
    condition     = var.tasks_queue_count >= 1 && var.tasks_queue_count <= 32 && floor(var.tasks_queue_count) == var.tasks_queue_count
    error_message = "tasks_queue_count must be a whole number in 1..32 (the gateway refuses more queues)."
  }
}

variable "tasks_max_dispatches_per_second" {
  description = "Cloud Tasks rate limit per queue: task dispatches per second to deliver (at most 500)."
  type        = number
}

variable "tasks_max_concurrent_dispatches" {
  description = "Cloud Tasks rate limit per queue: deliver calls in flight at once. Times tasks_queue_count it must stay within deliver_max_instances x request_concurrency."
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

# Service accounts and every IAM grant of the stack. Only *_iam_member (non-authoritative) resources: grants made
# elsewhere in the project (the relay's, the bootstrap's) are never removed by an apply.

# The existing runtime identity of every function (imported, imports.tf).
resource "google_service_account" "runtime" {
  account_id   = var.runtime_service_account_id
  display_name = "Orca cloud push gateway runtime"
}

# The identity Cloud Tasks mints the OIDC token for when it calls deliver.
resource "google_service_account" "tasks" {
  account_id   = "${var.name_prefix}-tasks"
  display_name = "Orca push: Cloud Tasks -> deliver"
}

# The identity Cloud Scheduler mints the OIDC token for when it calls sweep.
resource "google_service_account" "scheduler" {
  account_id   = "${var.name_prefix}-sched"
  display_name = "Orca push: Cloud Scheduler -> sweep"
}

# The identity of the rollout probe (probe.tf): reads /ready on new, traffic-less revisions.
resource "google_service_account" "prober" {
  account_id   = "${var.name_prefix}-prober"
  display_name = "Orca push: rollout readiness probe"
}

# The identity Cloud Build runs the functions' buildpack builds as (instead of the default compute account).
resource "google_service_account" "build" {
  account_id   = "${var.name_prefix}-build"
  display_name = "Orca push: function builds"
}

# --- runtime service account --------------------------------------------------------------------------------------

# Existing grants (imported): FCM v1 sends, and the quota project for those calls.
resource "google_project_iam_member" "runtime_fcm" {
  project = var.project_id
  role    = "roles/firebasecloudmessaging.admin"
  member  = google_service_account.runtime.member
}

resource "google_project_iam_member" "runtime_usage" {
  project = var.project_id
  role    = "roles/serviceusage.serviceUsageConsumer"
  member  = google_service_account.runtime.member
}

# Cloud SQL connector (client) and IAM database login (instanceUser), on this instance only.
resource "google_project_iam_member" "runtime_sql" {
  for_each = toset(["roles/cloudsql.client", "roles/cloudsql.instanceUser"])

  project = var.project_id
  role    = each.value
  member  = google_service_account.runtime.member
  condition {
    title      = "only-${google_sql_database_instance.main.name}"
    expression = "resource.name == \"projects/${var.project_id}/instances/${google_sql_database_instance.main.name}\" && resource.service == \"sqladmin.googleapis.com\""
  }
}

# send, deliver and sweep create tasks on the queue, and name the tasks service account as the OIDC identity, which
# needs iam.serviceAccounts.actAs on it.
resource "google_cloud_tasks_queue_iam_member" "runtime_enqueuer" {
  count    = var.tasks_queue_count
  name     = google_cloud_tasks_queue.deliver[count.index].name
  location = var.region
  role     = "roles/cloudtasks.enqueuer"
  member   = google_service_account.runtime.member
}

moved {
  from = google_cloud_tasks_queue_iam_member.runtime_enqueuer
  to   = google_cloud_tasks_queue_iam_member.runtime_enqueuer[0]
}

resource "google_service_account_iam_member" "runtime_acts_as_tasks" {
  service_account_id = google_service_account.tasks.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.runtime.member
}

# --- who may invoke the private functions -------------------------------------------------------------------------

locals {
  private_invokers = {
    "deliver/tasks"  = { function = "deliver", member = google_service_account.tasks.member }
    "deliver/prober" = { function = "deliver", member = google_service_account.prober.member }
    "sweep/sched"    = { function = "sweep", member = google_service_account.scheduler.member }
    "sweep/prober"   = { function = "sweep", member = google_service_account.prober.member }
  }
}

resource "google_cloud_run_v2_service_iam_member" "private_invoker" {
  for_each = local.private_invokers

  name     = google_cloudfunctions2_function.fn[each.value.function].name
  location = var.region
  role     = "roles/run.invoker"
  member   = each.value.member
}

# The public functions take unauthenticated requests (the contract's host auth is in the body and bearer token).
# Their ingress only admits the load balancer and internal callers (functions.tf).
resource "google_cloud_run_v2_service_iam_member" "public_invoker" {
  for_each = local.public_functions

  name     = google_cloudfunctions2_function.fn[each.key].name
  location = var.region
  role     = "roles/run.invoker"
  member   = "allUsers"
}

# --- builds -------------------------------------------------------------------------------------------------------

# The minimum a Cloud Run functions build needs with a user-managed build account: write logs, push the image to
# gcf-artifacts, read the source archive.
resource "google_project_iam_member" "build" {
  for_each = toset(["roles/logging.logWriter", "roles/artifactregistry.writer"])

  project = var.project_id
  role    = each.value
  member  = google_service_account.build.member
}

resource "google_storage_bucket_iam_member" "build_reads_source" {
  bucket = google_storage_bucket.deploy.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.build.member
}

# --- the deployer (GitHub Actions through Workload Identity Federation) --------------------------------------------

locals {
  deployer_member = "serviceAccount:${var.deployer_service_account_email}"
}

# Update functions (new source object) and poll their operations.
resource "google_project_iam_member" "deployer_functions" {
  project = var.project_id
  role    = "roles/cloudfunctions.developer"
  member  = local.deployer_member
}

# Pin, tag and shift traffic on each function's Cloud Run service.
resource "google_cloud_run_v2_service_iam_member" "deployer_traffic" {
  for_each = local.functions

  name     = google_cloudfunctions2_function.fn[each.key].name
  location = var.region
  role     = "roles/run.developer"
  member   = local.deployer_member
}

# Deploying a function that runs as (and builds as) a service account needs actAs on it. Token creation on the runtime
# account lets the workflow run migrations as the database's IAM user (through the Cloud SQL Auth Proxy) and make
# the validate-only FCM probe as the identity that really sends.
resource "google_service_account_iam_member" "deployer_acts_as" {
  for_each = {
    "runtime/user"    = { sa = google_service_account.runtime.name, role = "roles/iam.serviceAccountUser" }
    "build/user"      = { sa = google_service_account.build.name, role = "roles/iam.serviceAccountUser" }
    "runtime/creator" = { sa = google_service_account.runtime.name, role = "roles/iam.serviceAccountTokenCreator" }
  }

  service_account_id = each.value.sa
  role               = each.value.role
  member             = local.deployer_member
}

# Source archives (source/<sha>.zip) and the rollout lease (leases/...).
resource "google_storage_bucket_iam_member" "deployer_objects" {
  bucket = google_storage_bucket.deploy.name
  role   = "roles/storage.objectAdmin"
  member = local.deployer_member
}

# Run the readiness probe workflow.
resource "google_project_iam_member" "deployer_probe" {
  project = var.project_id
  role    = "roles/workflows.invoker"
  member  = local.deployer_member
}

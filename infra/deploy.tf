# What the deploy workflow (.github/workflows/cloud-push-deploy.yml) needs from the project: a bucket for source
# archives and the rollout lease, and a way to reach new revisions that the internet cannot.

resource "google_storage_bucket" "deploy" {
  name                        = "${var.project_id}-orca-push-deploy"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  # Source archives are only needed while a function builds; keep a few months for rollbacks by re-deploy.
  lifecycle_rule {
    condition {
      age            = 90
      matches_prefix = ["source/"]
    }
    action {
      type = "Delete"
    }
  }
}

# The rollout readiness probe. The runner cannot call a new revision itself: public functions take only load
# balancer and internal traffic, private ones only internal traffic. Workflows in the same project counts as
# internal (cloud.google.com/run/docs/securing/ingress), so the deploy script runs this with the revisions' tag URLs
# and reads back each /ready status. It signs its requests as the prober account (run.invoker on deliver and sweep).
resource "google_workflows_workflow" "probe" {
  name            = "${var.name_prefix}-probe"
  region          = var.region
  description     = "GET <tag url>/ready with an OIDC token for every target; returns the status codes."
  service_account = google_service_account.prober.id
  call_log_level  = "LOG_ERRORS_ONLY"
  source_contents = file("${path.module}/probe-workflow.yaml")

  depends_on = [google_project_service.api]
}

resource "google_project_service" "api" {
  for_each = toset([
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudfunctions.googleapis.com",
    "cloudscheduler.googleapis.com",
    "cloudtasks.googleapis.com",
    "compute.googleapis.com",
    "fcm.googleapis.com",
    "iamcredentials.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "servicenetworking.googleapis.com",
    "sqladmin.googleapis.com",
    "vpcaccess.googleapis.com",
    "workflows.googleapis.com",
  ])

  service            = each.value
  disable_on_destroy = false
}

# The APNs credentials. The three secrets and their versions already exist (imports.tf); Terraform declares the
# secrets and the runtime account's access, never the values.

locals {
  # Fixed names: the secrets exist already (contract, "Gateway env").
  secret_ids = {
    "apns-key"      = "orca-cloud-push-apns-key"
    "apns-key-id"   = "orca-cloud-push-apns-key-id"
    "apple-team-id" = "orca-cloud-push-apple-team-id"
  }
}

resource "google_secret_manager_secret" "gateway" {
  for_each = local.secret_ids

  secret_id = each.value
  replication {
    auto {}
  }

  # The provider refuses to delete (or replace) them: losing the APNs key is not recoverable by an apply.
  deletion_protection = true
}

resource "google_secret_manager_secret_iam_member" "runtime_accessor" {
  for_each = local.secret_ids

  secret_id = google_secret_manager_secret.gateway[each.key].id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

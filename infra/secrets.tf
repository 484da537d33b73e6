# The APNs credentials and the payload key ring. The three APNs secrets and their versions already exist
# (imports.tf); the payload key ring's secret is Terraform's own, its versions an operator's (README "Payload
# keys"). Terraform declares the secrets and the runtime account's access, never the values: no key is in state.

locals {
  # Fixed names: the secrets exist already (contract, "Gateway env").
  secret_ids = {
    "apns-key"      = "orca-cloud-push-apns-key"
    "apns-key-id"   = "orca-cloud-push-apns-key-id"
    "apple-team-id" = "orca-cloud-push-apple-team-id"
  }
  # ORCA_PUSH_PAYLOAD_KEYS, the ring that seals the notification text batches store: new with issue 23, so not
  # imported. A function refuses to start without it.
  payload_keys_secret_id = "orca-cloud-push-payload-keys"
  gateway_secret_ids     = merge(local.secret_ids, { "payload-keys" = local.payload_keys_secret_id })
}

resource "google_secret_manager_secret" "gateway" {
  for_each = local.gateway_secret_ids

  secret_id = each.value
  replication {
    auto {}
  }

  # The provider refuses to delete (or replace) them: losing the APNs key is not recoverable by an apply, and
  # losing the payload key ring makes every pending alert unopenable.
  deletion_protection = true
}

resource "google_secret_manager_secret_iam_member" "runtime_accessor" {
  for_each = local.gateway_secret_ids

  secret_id = google_secret_manager_secret.gateway[each.key].id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

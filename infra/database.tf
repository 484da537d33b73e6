# The dedicated HA PostgreSQL instance, its private network path, the orca_push database and the IAM database user.

resource "google_compute_network" "main" {
  name                    = var.name_prefix
  auto_create_subnetworks = false
  depends_on              = [google_project_service.api]
}

# Private services access: the range Cloud SQL takes its private IP from, peered into the network.
resource "google_compute_global_address" "sql_psa" {
  name          = "${var.name_prefix}-sql-psa"
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = var.network_psa_prefix_length
  network       = google_compute_network.main.id
}

resource "google_service_networking_connection" "sql" {
  network                 = google_compute_network.main.id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.sql_psa.name]
}

# The functions' egress to private ranges (the instance's private IP) goes through this connector.
resource "google_vpc_access_connector" "main" {
  name          = "orca-push-vpc"
  region        = var.region
  network       = google_compute_network.main.name
  ip_cidr_range = var.vpc_connector_cidr
  machine_type  = "e2-micro"
  min_instances = 2
  max_instances = 3
}

resource "google_sql_database_instance" "main" {
  name                = "${var.name_prefix}-pg"
  region              = var.region
  database_version    = var.sql_database_version
  deletion_protection = var.sql_deletion_protection

  settings {
    tier                        = var.sql_tier
    edition                     = "ENTERPRISE"
    availability_type           = "REGIONAL" # HA: a standby in a second zone, automatic failover
    deletion_protection_enabled = var.sql_deletion_protection
    disk_autoresize             = true
    # Only the Cloud SQL connectors (the Go connector in the functions, the Auth Proxy in the deploy workflow) may
    # connect: each presents an ephemeral client certificate and logs in with IAM.
    connector_enforcement = "REQUIRED"

    ip_configuration {
      ipv4_enabled    = var.sql_public_ip_for_rollouts # no authorized_networks: connectors only, see above
      private_network = google_compute_network.main.id
      ssl_mode        = "TRUSTED_CLIENT_CERTIFICATE_REQUIRED"
    }

    database_flags {
      name  = "cloudsql.iam_authentication"
      value = "on"
    }

    backup_configuration {
      enabled                        = true
      point_in_time_recovery_enabled = true
      start_time                     = "09:00"
    }

    maintenance_window {
      day          = 7 # Sunday
      hour         = 10
      update_track = "stable"
    }

    insights_config {
      query_insights_enabled = true
    }
  }

  depends_on = [google_service_networking_connection.sql]
}

resource "google_sql_database" "orca_push" {
  name     = "orca_push"
  instance = google_sql_database_instance.main.name
}

# The runtime service account logs in as itself; there is no password user. (The instance's built-in postgres user
# has no password; README.md's bootstrap uses it once to grant the schema.)
resource "google_sql_user" "runtime" {
  name     = local.db_iam_user
  instance = google_sql_database_instance.main.name
  type     = "CLOUD_IAM_SERVICE_ACCOUNT"
}

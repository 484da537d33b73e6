# Global external Application Load Balancer for push.onorca.dev: one serverless NEG and backend service per public
# function, and a URL map sending each contract path to its function.
#
# TODO(stablyai/orca-cloud, apps root DNS zone): add the record
#   push.onorca.dev.  A  <output load_balancer_ip>
# The managed certificate below stays PROVISIONING until that record resolves to this load balancer.

locals {
  # Contract path => the public function that serves it (design.md, "Functions").
  routes = {
    "/v1/host/challenge" = "host-challenge"
    "/v1/host/session"   = "host-session"
    "/v1/devices"        = "devices"
    "/v1/devices/*"      = "devices"
    "/v1/send"           = "send"
    "/v1/receipts"       = "receipts"
  }
}

resource "google_compute_global_address" "lb" {
  name = "${var.name_prefix}-lb"
}

resource "google_compute_region_network_endpoint_group" "public" {
  for_each = local.public_functions

  name                  = "${var.name_prefix}-${each.key}"
  region                = var.region
  network_endpoint_type = "SERVERLESS"
  # A Cloud Run functions function is a Cloud Run service of the same name.
  cloud_run {
    service = google_cloudfunctions2_function.fn[each.key].name
  }
}

resource "google_compute_backend_service" "public" {
  for_each = local.public_functions

  name                  = "${var.name_prefix}-${each.key}"
  load_balancing_scheme = "EXTERNAL_MANAGED"
  protocol              = "HTTPS"

  backend {
    group = google_compute_region_network_endpoint_group.public[each.key].id
  }

  # Every push is a request: at sample_rate 1 the load balancer's logs cost about $0.5 per million pushes, and
  # Cloud Run's request logs (logging.tf) already record each one (infra/README.md, "Capacity and cost").
  log_config {
    enable      = var.lb_log_sample_rate > 0
    sample_rate = var.lb_log_sample_rate
  }
}

resource "google_compute_url_map" "public" {
  name = var.name_prefix
  # Any other host or path: the send function, which answers 404 (or /health) itself.
  default_service = google_compute_backend_service.public["send"].id

  host_rule {
    hosts        = [var.public_hostname]
    path_matcher = "push"
  }

  path_matcher {
    name            = "push"
    default_service = google_compute_backend_service.public["send"].id

    dynamic "path_rule" {
      for_each = local.routes
      content {
        paths   = [path_rule.key]
        service = google_compute_backend_service.public[path_rule.value].id
      }
    }
  }
}

resource "google_compute_managed_ssl_certificate" "public" {
  name = "${var.name_prefix}-cert"
  managed {
    domains = [var.public_hostname]
  }
}

resource "google_compute_target_https_proxy" "public" {
  name             = var.name_prefix
  url_map          = google_compute_url_map.public.id
  ssl_certificates = [google_compute_managed_ssl_certificate.public.id]
}

resource "google_compute_global_forwarding_rule" "https" {
  name                  = "${var.name_prefix}-https"
  load_balancing_scheme = "EXTERNAL_MANAGED"
  ip_address            = google_compute_global_address.lb.id
  ip_protocol           = "TCP"
  port_range            = "443"
  target                = google_compute_target_https_proxy.public.id
}

terraform {
  # Import blocks whose id uses variables need Terraform >= 1.6 (or any OpenTofu >= 1.6).
  required_version = ">= 1.6"

  required_providers {
    google = {
      source = "hashicorp/google"
      # The offline validator (../shared/tools/infra-check) checks against the 6.50 schema: keep the two in step.
      version = "~> 6.50"
    }
  }

  # State lives in the bucket made by the one-time bootstrap (README.md, "Bootstrap"):
  #   tofu init -backend-config="bucket=<project>-orca-push-tfstate"
  backend "gcs" {
    prefix = "orca-push"
  }
}

provider "google" {
  project = var.project_id
  region  = var.region
}

data "google_project" "this" {
  project_id = var.project_id
}

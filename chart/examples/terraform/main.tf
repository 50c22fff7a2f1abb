# Infrastructure code for vault-standalone: the bootstrap Secrets and the Argo CD
# Application, all from the gitignored variables file written by
#   npm run cli -- generate-bootstrap --format tfvars     (run in this directory)
# A sketch to adapt: provider configuration, state backend and namespaces are yours.
#
# The Terraform STATE holds every value below in plain text: keep it in an encrypted,
# access-controlled backend, never in git (*.tfstate is gitignored).

terraform {
  required_version = ">= 1.5"
  required_providers {
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = ">= 2.23"
    }
  }
}

provider "kubernetes" {
  # e.g. config_path = "~/.kube/config"
}

locals {
  # The Helm values blob: the passwords plus the non-secret settings. Never
  # ENCRYPTION_KEY or AUTH_SECRET (the chart's schema rejects them on purpose).
  # No setupToken: the service derives the first visit's setup code from AUTH_SECRET
  # (stable across Argo CD's renders and the pods' restarts); after apply, print it with
  #   kubectl -n vault exec deploy/vault-vault-standalone -- node dist/server/cli/main.js setup-code
  helm_values = yamlencode({
    image = {
      repository = var.image_repository
      tag        = var.image_tag
    }
    service = {
      type = var.service_type
    }
    secrets = {
      existingSecret = kubernetes_secret_v1.vault_secrets.metadata[0].name
    }
    postgresql = {
      auth = { password = var.postgresql_password }
    }
    redis = {
      auth = { password = var.redis_password }
    }
  })

  # The Application as committed (../application.yaml), with the placeholders filled in.
  application = yamldecode(file("${path.module}/../application.yaml"))
}

resource "kubernetes_namespace_v1" "service" {
  metadata {
    name = var.service_namespace
  }
}

# ENCRYPTION_KEY and AUTH_SECRET, loaded by the app with envFrom (chart value
# secrets.existingSecret).
resource "kubernetes_secret_v1" "vault_secrets" {
  metadata {
    name      = "vault-secrets"
    namespace = kubernetes_namespace_v1.service.metadata[0].name
  }
  data = {
    ENCRYPTION_KEY = var.encryption_key
    AUTH_SECRET    = var.auth_secret
  }
}

# The Helm values blob, kept beside the deployment tool (the Application below carries
# the same blob: Argo CD cannot read Helm values from a Secret).
resource "kubernetes_secret_v1" "vault_helm_secrets" {
  metadata {
    name      = "vault-helm-secrets"
    namespace = var.deployment_tool_namespace
  }
  data = {
    "values.yaml" = local.helm_values
  }
}

# The machine identity's Universal Auth credentials for the ClusterSecretStore
# (../cluster-secret-store.yaml). The operator picks a change up within about 30 s.
resource "kubernetes_secret_v1" "vault_machine_identity" {
  metadata {
    name      = "vault-machine-identity"
    namespace = var.operator_namespace
  }
  data = {
    clientId     = var.machine_identity_client_id
    clientSecret = var.machine_identity_client_secret
  }
}

resource "kubernetes_manifest" "vault_application" {
  manifest = merge(local.application, {
    metadata = merge(local.application.metadata, {
      namespace = var.deployment_tool_namespace
    })
    spec = merge(local.application.spec, {
      source = merge(local.application.spec.source, {
        repoURL        = var.chart_repository
        targetRevision = var.chart_version
        helm = merge(local.application.spec.source.helm, {
          values = kubernetes_secret_v1.vault_helm_secrets.data["values.yaml"]
        })
      })
      destination = merge(local.application.spec.destination, {
        namespace = kubernetes_namespace_v1.service.metadata[0].name
      })
    })
  })

  # The app must find vault-secrets at its first start.
  depends_on = [kubernetes_secret_v1.vault_secrets]
}

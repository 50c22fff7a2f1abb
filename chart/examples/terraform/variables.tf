# Bootstrap values: exactly the names `vault-standalone generate-bootstrap --format
# tfvars` writes (into vault-bootstrap.auto.tfvars, which Terraform loads by itself
# from this directory). That file and every *.tfvars are gitignored.

variable "encryption_key" {
  description = "ENCRYPTION_KEY: 32 hex characters. Never changes once secrets are stored (rotate only with `vault-standalone rotate-key`)."
  type        = string
  sensitive   = true
  validation {
    condition     = can(regex("^[0-9a-fA-F]{32}$", var.encryption_key))
    error_message = "encryption_key must be exactly 32 hex characters."
  }
}

variable "auth_secret" {
  description = "AUTH_SECRET: base64 of 32 random bytes; signs session and access tokens."
  type        = string
  sensitive   = true
  validation {
    condition     = can(regex("^[A-Za-z0-9+/]{43}=$", var.auth_secret))
    error_message = "auth_secret must be base64 of 32 bytes (44 characters)."
  }
}

variable "postgresql_password" {
  description = "Helm value postgresql.auth.password: 24 lowercase hex characters."
  type        = string
  sensitive   = true
  validation {
    condition     = can(regex("^[0-9a-f]{24}$", var.postgresql_password))
    error_message = "postgresql_password must be 24 lowercase hex characters (the chart's schema)."
  }
}

variable "redis_password" {
  description = "Helm value redis.auth.password: 24 lowercase hex characters."
  type        = string
  sensitive   = true
  validation {
    condition     = can(regex("^[0-9a-f]{24}$", var.redis_password))
    error_message = "redis_password must be 24 lowercase hex characters (the chart's schema)."
  }
}

# The machine identity homelab-eso, created in the UI after the first install (its
# clientSecret is shown once). Put both into a gitignored *.auto.tfvars and apply; until
# then the placeholders make the ClusterSecretStore report 401 (InvalidProviderConfig).

variable "machine_identity_client_id" {
  description = "clientId of the machine identity homelab-eso (Secret vault-machine-identity, key clientId)."
  type        = string
  sensitive   = true
  default     = "CHANGE_ME_after_first_setup"
}

variable "machine_identity_client_secret" {
  description = "clientSecret of the machine identity homelab-eso (Secret vault-machine-identity, key clientSecret)."
  type        = string
  sensitive   = true
  default     = "CHANGE_ME_after_first_setup"
}

# Not secret.

variable "service_namespace" {
  description = "Namespace of the service (the Secret vault-secrets, the Helm release)."
  type        = string
  default     = "vault"
}

variable "deployment_tool_namespace" {
  description = "Namespace of Argo CD (the Application and the Secret vault-helm-secrets)."
  type        = string
  default     = "argocd"
}

variable "operator_namespace" {
  description = "Namespace of the External Secrets Operator (the Secret vault-machine-identity)."
  type        = string
  default     = "external-secrets"
}

variable "chart_repository" {
  description = "Where the chart was pushed: an OCI registry path without a scheme (registry.example/charts) or a Helm repository URL."
  type        = string
}

variable "chart_version" {
  description = "The chart version to deploy (the Application's targetRevision). Upgrades change this."
  type        = string
  default     = "2.0.0"
}

variable "image_repository" {
  description = "The image pushed by `docker push` (docs/operations.md, 1.1)."
  type        = string
}

variable "image_tag" {
  description = "The image tag; the chart's appVersion when empty."
  type        = string
  default     = "0.1.0"
}

variable "service_type" {
  description = "ClusterIP, or NodePort for the UI on every node at port 30445."
  type        = string
  default     = "ClusterIP"
}

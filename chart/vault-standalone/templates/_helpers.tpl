{{/*
The chart's name: nameOverride, else the chart's own (app.kubernetes.io/name).
*/}}
{{- define "vault-standalone.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Full name of the app's resources and of its Service, Helm's convention: <release>-<name>
(release "vault" -> "vault-vault-standalone"), or the release name alone when it already
contains the name (release "vault-standalone" -> "vault-standalone"). fullnameOverride
replaces it. The External Secrets Operator reaches the API at
http://<fullname>.<namespace>.svc.cluster.local:8080/api, so this rule is part of the
interface. Releases installed with chart 1.x were named <release>-vault-standalone-vault-standalone:
keep that name with fullnameOverride on upgrade (docs/operations.md, "Chart 2.0").
*/}}
{{- define "vault-standalone.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "vault-standalone.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Prefix for the bundled services. A StatefulSet's name must leave room for the pod
suffix and controller-revision hash (<= 52 characters), so the prefix is cut to 41
before the suffix is added: "-postgresql" (11) and "-redis" (6) never collide.
*/}}
{{- define "vault-standalone.componentPrefix" -}}
{{- include "vault-standalone.fullname" . | trunc 41 | trimSuffix "-" -}}
{{- end -}}

{{- define "vault-standalone.postgresql.fullname" -}}
{{- printf "%s-postgresql" (include "vault-standalone.componentPrefix" .) -}}
{{- end -}}

{{- define "vault-standalone.redis.fullname" -}}
{{- printf "%s-redis" (include "vault-standalone.componentPrefix" .) -}}
{{- end -}}

{{/* The chart's own Secret: bundled database and cache passwords. */}}
{{- define "vault-standalone.authSecretName" -}}
{{- printf "%s-auth" (include "vault-standalone.fullname" . | trunc 58 | trimSuffix "-") -}}
{{- end -}}

{{- define "vault-standalone.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vault-standalone.labels" -}}
helm.sh/chart: {{ include "vault-standalone.chart" . }}
app.kubernetes.io/name: {{ include "vault-standalone.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels; the component tells the app, postgresql and redis apart. */}}
{{- define "vault-standalone.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vault-standalone.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "vault-standalone.postgresql.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vault-standalone.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: postgresql
{{- end -}}

{{- define "vault-standalone.backup.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vault-standalone.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: backup
{{- end -}}

{{- define "vault-standalone.backup.claimName" -}}
{{- .Values.postgresql.backup.persistence.existingClaim | default (printf "%s-backup" (include "vault-standalone.componentPrefix" .)) -}}
{{- end -}}

{{- define "vault-standalone.redis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vault-standalone.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end -}}

{{- define "vault-standalone.image" -}}
{{- include "vault-standalone.imageRef" (dict "repository" .Values.image.repository "tag" (.Values.image.tag | default .Chart.AppVersion) "digest" .Values.image.digest) -}}
{{- end -}}

{{/* repository:tag, with @digest when one is given (the digest then decides what runs). */}}
{{- define "vault-standalone.imageRef" -}}
{{- if .digest -}}
{{- printf "%s:%s@%s" .repository (toString .tag) .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository (toString .tag) -}}
{{- end -}}
{{- end -}}

{{/* The bundled Redis-protocol server's programs: Valkey's (the default) or Redis's. */}}
{{- define "vault-standalone.redis.server" -}}
{{- if eq .Values.redis.flavor "redis" }}redis-server{{ else }}valkey-server{{ end -}}
{{- end -}}
{{- define "vault-standalone.redis.cli" -}}
{{- if eq .Values.redis.flavor "redis" }}redis-cli{{ else }}valkey-cli{{ end -}}
{{- end -}}

{{/*
Passwords of the bundled services: required when the service is enabled, and exactly
24 lowercase hex characters (they are interpolated into URLs unescaped, so the
alphabet is part of the contract).
*/}}
{{- define "vault-standalone.postgresql.password" -}}
{{- $p := .Values.postgresql.auth.password | default "" | toString -}}
{{- if not (regexMatch "^[0-9a-f]{24}$" $p) -}}
{{- fail "postgresql.auth.password is required when postgresql.enabled: 24 lowercase hex characters (openssl rand -hex 12)" -}}
{{- end -}}
{{- $p -}}
{{- end -}}

{{- define "vault-standalone.redis.password" -}}
{{- $p := .Values.redis.auth.password | default "" | toString -}}
{{- if not (regexMatch "^[0-9a-f]{24}$" $p) -}}
{{- fail "redis.auth.password is required when redis.enabled: 24 lowercase hex characters (openssl rand -hex 12)" -}}
{{- end -}}
{{- $p -}}
{{- end -}}

{{/* redis-cli's TLS options for the probes (the chain against ca.crt; hiredis checks no host name). */}}
{{- define "vault-standalone.redis.cliTls" -}}
{{- if .Values.redis.tls.existingSecret -}}
--tls --cacert /var/run/secrets/redis-tls/ca.crt {{ end -}}
{{- end -}}

{{/*
Where the app's CA files and Redis password come from, as JSON {"name", "key"} of a
Secret, or empty when there is none: the bundled service's TLS Secret (ca.crt) or the
chart's own Secret, else the external one's setting.
*/}}
{{- define "vault-standalone.databaseCa" -}}
{{- if .Values.postgresql.enabled -}}
{{- with .Values.postgresql.tls.existingSecret }}{{ dict "name" . "key" "ca.crt" | toJson }}{{ end -}}
{{- else if .Values.externalDatabase.caSecret.name -}}
{{- toJson .Values.externalDatabase.caSecret -}}
{{- end -}}
{{- end -}}

{{- define "vault-standalone.redisCa" -}}
{{- if .Values.redis.enabled -}}
{{- with .Values.redis.tls.existingSecret }}{{ dict "name" . "key" "ca.crt" | toJson }}{{ end -}}
{{- else if and .Values.externalRedis.existingSecret .Values.externalRedis.caSecret.name -}}
{{- toJson .Values.externalRedis.caSecret -}}
{{- end -}}
{{- end -}}

{{- define "vault-standalone.redisPasswordSecret" -}}
{{- if .Values.redis.enabled -}}
{{- dict "name" (include "vault-standalone.authSecretName" .) "key" "redis-password" | toJson -}}
{{- else if and .Values.externalRedis.existingSecret .Values.externalRedis.passwordSecret.name -}}
{{- toJson .Values.externalRedis.passwordSecret -}}
{{- end -}}
{{- end -}}

{{/* The app pods' ServiceAccount. */}}
{{- define "vault-standalone.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "vault-standalone.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The TLS Secret the pod mounts: an existing one or the one cert-manager fills. Empty: plain HTTP. */}}
{{- define "vault-standalone.tlsSecret" -}}
{{- if .Values.tls.enabled -}}
{{- if .Values.tls.existingSecret -}}
{{- .Values.tls.existingSecret -}}
{{- else if .Values.tls.certManager.enabled -}}
{{- printf "%s-tls" (include "vault-standalone.fullname" . | trunc 59 | trimSuffix "-") -}}
{{- else -}}
{{- fail "tls.enabled needs tls.existingSecret or tls.certManager.enabled" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Non-empty when more than one app pod may run (replicaCount, or the HPA's maximum). */}}
{{- define "vault-standalone.multiReplica" -}}
{{- if or (gt (int .Values.replicaCount) 1) (and .Values.autoscaling.enabled (gt (int .Values.autoscaling.maxReplicas) 1)) }}true{{ end -}}
{{- end -}}

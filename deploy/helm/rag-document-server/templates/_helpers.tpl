{{/* Names and labels. */}}
{{- define "rag.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "rag.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "rag.redisName" -}}
{{- printf "%s-redis" (include "rag.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "rag.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "rag.labels" -}}
{{ include "rag.commonLabels" . }}
app.kubernetes.io/name: {{ include "rag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rag.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "rag.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ include "rag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end -}}

{{- define "rag.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "rag.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The server image: a digest wins, else the tag, else the chart's appVersion; never latest. */}}
{{- define "rag.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if eq $tag "latest" -}}
{{- fail "image.tag: pin a version, not latest (a pod restarted later must run the same server as its siblings)" -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Redis: at most one of the two, and MCP_INDEX_STORE=redis with either. */}}
{{- define "rag.redisEnabled" -}}
{{- if and .Values.redis.enabled .Values.externalRedis.enabled -}}
{{- fail "redis.enabled and externalRedis.enabled: choose one (the bundled Redis is for trying the chart)" -}}
{{- end -}}
{{- if and .Values.externalRedis.enabled (not .Values.externalRedis.existingSecret) -}}
{{- fail "externalRedis.existingSecret: the Secret holding the Redis URL (a URL with a password is a secret, never a value)" -}}
{{- end -}}
{{- if or .Values.redis.enabled .Values.externalRedis.enabled -}}true{{- end -}}
{{- end -}}

{{/* Sizes in Mi derived from the byte budgets (values.yaml, "resources"). */}}
{{- define "rag.memoryRequestMi" -}}
{{- $d := .Values.resources.derive -}}
{{- add (int $d.overheadMB) (mul (int .Values.server.workers) (add (int $d.perWorkerMB) (int .Values.server.memoryBudgetMB))) -}}
{{- end -}}

{{- define "rag.memoryLimitMi" -}}
{{- $d := .Values.resources.derive -}}
{{- add (include "rag.memoryRequestMi" . | int) (mul (int .Values.server.workers) (int $d.transientMB)) (mul (int .Values.server.parseWorkers) (int $d.perParserMB)) -}}
{{- end -}}

{{/* The index folder: the bound plus one index just saved (MCP_INDEX_STORE_MAX_BYTES, 256 MB). */}}
{{- define "rag.indexSize" -}}
{{- default (printf "%dMi" (add (int .Values.server.indexDirMaxMB) 256)) .Values.indexVolume.size -}}
{{- end -}}

{{/* The data folder (/var/lib/rag): the uploads' fallback folder and 64 Mi for the rest. */}}
{{- define "rag.dataSize" -}}
{{- printf "%dMi" (add (int .Values.server.uploadStoreMaxMB) 64) -}}
{{- end -}}

{{/* Kubernetes quantities to Mi, for the ephemeral-storage sum (Mi and Gi only). */}}
{{- define "rag.toMi" -}}
{{- $q := toString . -}}
{{- if hasSuffix "Gi" $q -}}{{- mul (trimSuffix "Gi" $q | int) 1024 -}}
{{- else if hasSuffix "Mi" $q -}}{{- trimSuffix "Mi" $q | int -}}
{{- else -}}{{- fail (printf "%s: give volume sizes in Mi or Gi" $q) -}}
{{- end -}}
{{- end -}}

{{- define "rag.ephemeralMi" -}}
{{- $sum := add (include "rag.toMi" .Values.volumes.tmpSizeLimit | int) (include "rag.toMi" .Values.volumes.modelCacheSizeLimit | int) (include "rag.toMi" (include "rag.dataSize" .) | int) -}}
{{- if eq .Values.indexVolume.type "emptyDir" -}}
{{- $sum = add $sum (include "rag.toMi" (include "rag.indexSize" .) | int) -}}
{{- end -}}
{{- $sum -}}
{{- end -}}

{{- define "rag.resources" -}}
{{- $d := .Values.resources.derive -}}
{{- $workers := int .Values.server.workers -}}
requests:
{{- if .Values.resources.requests }}
  {{- toYaml .Values.resources.requests | nindent 2 }}
{{- else }}
  cpu: {{ mulf (float64 $d.cpuPerWorker) $workers | toString | quote }}
  memory: {{ include "rag.memoryRequestMi" . }}Mi
  ephemeral-storage: {{ include "rag.ephemeralMi" . }}Mi
{{- end }}
limits:
{{- if .Values.resources.limits }}
  {{- toYaml .Values.resources.limits | nindent 2 }}
{{- else }}
  cpu: {{ mulf (float64 $d.cpuLimitPerWorker) $workers | toString | quote }}
  memory: {{ include "rag.memoryLimitMi" . }}Mi
  ephemeral-storage: {{ include "rag.ephemeralMi" . }}Mi
{{- end }}
{{- end -}}

{{/* Host header values the server accepts: the Service's names, the pod's IP, Ingress hosts. */}}
{{- define "rag.allowedHosts" -}}
{{- $svc := include "rag.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $hosts := list (printf "%s:*" $svc) (printf "%s.%s:*" $svc $ns) (printf "%s.%s.svc:*" $svc $ns) (printf "%s.%s.svc.cluster.local:*" $svc $ns) $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) "$(POD_IP)" "$(POD_IP):*" -}}
{{- if .Values.ingress.enabled -}}
{{- range .Values.ingress.hosts -}}
{{- $hosts = append $hosts .host -}}
{{- $hosts = append $hosts (printf "%s:*" .host) -}}
{{- end -}}
{{- end -}}
{{- concat $hosts .Values.server.allowedHosts | uniq | join "," -}}
{{- end -}}

{{/* GET /health as the probes ask it: Host localhost, which the DNS-rebinding guard always allows. */}}
{{- define "rag.healthGet" -}}
path: /health
port: http
httpHeaders:
  - name: Host
    value: localhost
{{- end -}}

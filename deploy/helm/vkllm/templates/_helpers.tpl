{{- define "vkllm.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "vkllm.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "vkllm.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "vkllm.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "vkllm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vkllm.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "vkllm.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "vkllm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "vkllm.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "vkllm.apiKeySecret" -}}
{{- .Values.apiKey.existingSecret | default (printf "%s-api-key" (include "vkllm.fullname" .)) }}
{{- end }}

{{/* The pod's grace period: the preStop sleep, the drain, a margin. */}}
{{- define "vkllm.gracePeriod" -}}
{{- add .Values.server.preStopSleepSeconds .Values.server.drainSeconds .Values.server.graceMarginSeconds }}
{{- end }}

{{/* --allowed-hosts of a keyless server: the Service's names, then server.allowedHosts. */}}
{{- define "vkllm.allowedHosts" -}}
{{- $svc := include "vkllm.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.server.clusterDomain) }}
{{- $extra := .Values.server.allowedHosts | default list }}
{{- if kindIs "string" $extra }}{{ $extra = splitList "," $extra }}{{ end }}
{{- join "," (concat $names $extra) }}
{{- end }}

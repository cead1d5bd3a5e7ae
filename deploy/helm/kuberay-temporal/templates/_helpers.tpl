{{/* Names and labels shared by every object of the release. */}}

{{- define "kuberay-temporal.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kuberay-temporal.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kuberay-temporal.labels" -}}
{{ include "kuberay-temporal.selectorLabels" . }}
app.kubernetes.io/part-of: kuberay-temporal
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kuberay-temporal.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "kuberay-temporal.dashboardAccess" -}}
{{- $access := .Values.worker.dashboardAccess -}}
{{- if not (has $access (list "direct" "proxy")) -}}
{{- fail (printf "worker.dashboardAccess must be direct or proxy, not %v" $access) -}}
{{- end -}}
{{- $access -}}
{{- end -}}

{{- /* The namespaces the worker and the bridge work in, comma-separated; empty: all. With
singleNamespaceInstall and no watchNamespaces, the release's own, as KubeRay's chart does. */ -}}
{{- define "kuberay-temporal.watchNamespaces" -}}
{{- if and .Values.singleNamespaceInstall (not .Values.watchNamespaces) -}}
{{- .Release.Namespace -}}
{{- else -}}
{{- join "," .Values.watchNamespaces -}}
{{- end -}}
{{- end -}}

{{- /* KubeRay's --feature-gates syntax from featureGates: Name=true,Name=false. */ -}}
{{- define "kuberay-temporal.featureGates" -}}
{{- $pairs := list -}}
{{- range .Values.featureGates -}}
{{- $pairs = append $pairs (printf "%s=%t" .name .enabled) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* Names and labels. */}}
{{- define "okna.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "okna.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "okna.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "okna.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "okna.selectorLabels" -}}
app.kubernetes.io/name: {{ include "okna.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "okna.labels" -}}
{{ include "okna.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "okna.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "okna.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The DaemonSets of this release, as a JSON list of variants (README "Secrets only where they are
used"): ["compute", "nocompute"] when the pods are placed by roles that include compute and
another one, so that only nodes with the compute role mount the Placement clouds.yaml and Nova's
shared secret, and the others (gateways, often facing the internet) run unprivileged without
them; ["all"] (one DaemonSet, as before) with secretsOnComputeOnly false, a single role, or raw
placement overrides (nodeSelector, affinity), whose intent the chart cannot split.
*/}}
{{- define "okna.variants" -}}
{{- $p := .Values.placement -}}
{{- $roles := include "okna.placedRoles" . | fromJsonArray -}}
{{- if or (not .Values.secretsOnComputeOnly) $p.role $p.nodeSelector $p.affinity (not (has "compute" $roles)) (eq (len $roles) 1) -}}
["all"]
{{- else -}}
{{- $compute := include "okna.role" (dict "root" . "role" "compute") | fromYaml -}}
{{- if not $compute.label -}}
{{- fail "secretsOnComputeOnly needs a label for the compute role (global.nodeRoles.roles.compute.label): the network-only DaemonSet excludes nodes by that label, which a compute role given by nodeSelectorTerms does not have; set secretsOnComputeOnly: false to run one DaemonSet" -}}
{{- end -}}
["compute","nocompute"]
{{- end -}}
{{- end -}}

{{/* Per variant: "-nocompute" for the network-only DaemonSet, "" for the others. */}}
{{- define "okna.variantSuffix" -}}
{{- if eq . "nocompute" }}-nocompute{{ end -}}
{{- end -}}

{{/* The DaemonSet's (and its config key's) name. Call: include "okna.variantName" (dict "root" $ "variant" v) */}}
{{- define "okna.variantName" -}}
{{- $suffix := include "okna.variantSuffix" .variant -}}
{{- printf "%s%s" (include "okna.fullname" .root | trunc (int (sub 63 (len $suffix))) | trimSuffix "-") $suffix -}}
{{- end -}}

{{/*
The pods' selector labels. The network-only pods carry an app.kubernetes.io/name of their own,
so that the two DaemonSets' selectors never overlap, and the compute (or single) DaemonSet keeps
the selector of earlier releases (a selector is immutable: an upgrade could not change it).
*/}}
{{- define "okna.variantSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s%s" (include "okna.name" .root) (include "okna.variantSuffix" .variant) }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{/* The service account of a variant: the network-only agents have one of their own, without pods access. */}}
{{- define "okna.variantServiceAccountName" -}}
{{- $name := include "okna.serviceAccountName" .root -}}
{{- if and .root.Values.serviceAccount.create (eq .variant "nocompute") -}}
{{- printf "%s-nocompute" ($name | trunc 53 | trimSuffix "-") -}}
{{- else -}}
{{- $name -}}
{{- end -}}
{{- end -}}

{{/* Every service account the release's pods run as, once each (JSON list). */}}
{{- define "okna.serviceAccountNames" -}}
{{- $names := list -}}
{{- range include "okna.variants" . | fromJsonArray -}}
{{- $names = append $names (include "okna.variantServiceAccountName" (dict "root" $ "variant" .)) -}}
{{- end -}}
{{- $names | uniq | toJson -}}
{{- end -}}

{{/*
okna.role: the effective definition of one role, as YAML {label?, taint, nodeSelectorTerms?}.
global.nodeRoles.roles.<role> wins field by field over the profile's defaults: label
node-role.openkeel.io/<role> (default profile) or node-restriction.kubernetes.io/openkeel-<role>
(hardened), taint node-role.openkeel.io/<role>:NoSchedule in both (seed § 5.2: NodeRestriction
restricts labels, not taints). A role given by nodeSelectorTerms has no label.
Call: include "okna.role" (dict "root" $ "role" "compute")
*/}}
{{- define "okna.role" -}}
{{- $g := .root.Values.global.nodeRoles | default dict -}}
{{- $given := get ($g.roles | default dict) .role | default dict -}}
{{- $kebab := .role | kebabcase -}}
{{- $prefix := ternary "node-restriction.kubernetes.io/openkeel-" "node-role.openkeel.io/" (eq ($g.profile | default "default") "hardened") -}}
{{- if $given.nodeSelectorTerms }}
nodeSelectorTerms: {{- toYaml $given.nodeSelectorTerms | nindent 2 }}
{{- else }}
label: {{ $given.label | default (printf "%s%s" $prefix $kebab) | quote }}
{{- end }}
taint: {{- toYaml ($given.taint | default (dict "key" (printf "node-role.openkeel.io/%s" $kebab) "effect" "NoSchedule")) | nindent 2 }}
{{- end -}}

{{/* The roles this component is placed on: [role] when placement.role is set, else placement.roles. */}}
{{- define "okna.placedRoles" -}}
{{- if .Values.placement.role -}}
{{- list .Values.placement.role | toJson -}}
{{- else -}}
{{- .Values.placement.roles | default list | toJson -}}
{{- end -}}
{{- end -}}

{{/*
okna.placement: nodeSelector, affinity, tolerations and priorityClassName of the pod spec, as seed
§ 5.1-5.2 (openkeel.placement): the raw fields win over the roles; one role gives a nodeSelector,
several a nodeAffinity with one term per role (ORed); every taint is tolerated
(tolerateAllTaints, the default), else the tolerations of every listed role's taint, plus
extraTolerations. forceDownscale adds a nodeSelector on a reserved
label no node carries, whatever else is set.
*/}}
{{- define "okna.placement" -}}
{{- $variant := .variant -}}
{{- with .root -}}
{{- $root := . -}}
{{- $p := .Values.placement -}}
{{- $roles := include "okna.placedRoles" . | fromJsonArray -}}
{{- $computeLabel := (include "okna.role" (dict "root" . "role" "compute") | fromYaml).label -}}
{{- $nodeSelector := dict -}}
{{- $terms := list -}}
{{- $tolerations := list -}}
{{- range $roles -}}
{{- $r := include "okna.role" (dict "root" $root "role" .) | fromYaml -}}
{{- /* Each DaemonSet tolerates the taints of every placed role: a compute node may be a gateway too. */ -}}
{{- $tolerations = append $tolerations (dict "key" $r.taint.key "operator" "Exists" "effect" $r.taint.effect) -}}
{{- if or (eq $variant "all") (eq (eq . "compute") (eq $variant "compute")) -}}
{{- $roleTerms := list -}}
{{- if $r.label -}}
{{- if $p.role -}}
{{- $_ := set $nodeSelector $r.label "" -}}
{{- else -}}
{{- $roleTerms = list (dict "matchExpressions" (list (dict "key" $r.label "operator" "In" "values" (list "")))) -}}
{{- end -}}
{{- else -}}
{{- $roleTerms = $r.nodeSelectorTerms -}}
{{- end -}}
{{- range $roleTerms -}}
{{- $term := deepCopy . -}}
{{- if eq $variant "nocompute" -}}
{{- /* The exact complement of the compute DaemonSet's term: the agent grants a role only for the empty value. */ -}}
{{- $_ := set $term "matchExpressions" (append ($term.matchExpressions | default list) (dict "key" $computeLabel "operator" "NotIn" "values" (list ""))) -}}
{{- end -}}
{{- $terms = append $terms $term -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $tolerations = concat $tolerations ($p.extraTolerations | default list) -}}
{{- /* A node agent must outlive any taint while VMs run on its node (seed 000 § 4.1's
compute-disabled, a drain's, an operator's own): evicted, it is not recreated and every VM
there loses its metadata. As ovnkube-node and the seed's chassis do, it tolerates them all. */ -}}
{{- if $p.tolerateAllTaints -}}{{- $tolerations = list (dict "operator" "Exists") -}}{{- end -}}
{{- if $p.nodeSelector -}}{{- $nodeSelector = deepCopy $p.nodeSelector -}}{{- end -}}
{{- if .Values.forceDownscale -}}{{- $_ := set $nodeSelector "openkeel.io/forced-downscale" "true" -}}{{- end -}}
{{- $affinity := dict -}}
{{- if $p.affinity -}}
{{- $affinity = $p.affinity -}}
{{- else if $terms -}}
{{- $affinity = dict "nodeAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" $terms)) -}}
{{- end -}}
{{- if $p.tolerations -}}{{- $tolerations = $p.tolerations -}}{{- end -}}
{{- with $nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- /* The class: placement.priorityClassName, else the umbrella chart's infra class (seed 000 § 5.1,
global.placementDefaults.priorityClasses.infra), else system-node-critical. */ -}}
{{- $classes := ((.Values.global).placementDefaults).priorityClasses | default dict -}}
{{- with ($p.priorityClassName | default $classes.infra | default "system-node-critical") }}
priorityClassName: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The nodeRoles section of the agent's config: the same roles the chart placed the pods with. */}}
{{- define "okna.configNodeRoles" -}}
{{- $g := .Values.global.nodeRoles | default dict -}}
{{- $roles := dict -}}
{{- range list "controlPlane" "compute" "network" "storage" "containers" "provisioning" -}}
{{- $_ := set $roles . (include "okna.role" (dict "root" $ "role" .) | fromYaml) -}}
{{- end -}}
{{- $out := dict "profile" ($g.profile | default "default") "taints" ($g.taints | default false) "roles" $roles -}}
{{- toYaml $out -}}
{{- end -}}

{{/* Whether a variant runs the metadata service: the network-only agents only with metadata.onNetworkNodes (external ports). Call: include "okna.metadataOn" (dict "root" $ "variant" v) */}}
{{- define "okna.metadataOn" -}}
{{- $v := .root.Values -}}
{{- if and $v.metadata.enabled (or (ne .variant "nocompute") $v.metadata.onNetworkNodes) -}}
true
{{- end -}}
{{- end -}}

{{/* Call: include "okna.privileged" (dict "root" $ "variant" v). */}}
{{- define "okna.privileged" -}}
{{- $v := .root.Values -}}
{{- if or $v.securityContext.privileged (and (include "okna.metadataOn" .) (eq $v.metadata.netnsMountPropagation "Bidirectional")) -}}
true
{{- end -}}
{{- end -}}

{{/*
The agent's health.adminListen (/metrics, /debug/plan): the node's loopback unless
metrics.exposeOnNode, "" (not served) without metrics.enabled. The agent refuses the health port.
*/}}
{{- define "okna.adminListen" -}}
{{- if .Values.metrics.enabled -}}
{{- if eq (int .Values.metrics.port) (int .Values.health.port) -}}
{{- fail "metrics.port must differ from health.port: /metrics and /debug/plan have a listener of their own" -}}
{{- end -}}
{{- printf "%s:%d" (ternary .Values.metrics.bindAddress "127.0.0.1" .Values.metrics.exposeOnNode) (int .Values.metrics.port) -}}
{{- end -}}
{{- end -}}

{{/*
The agent's departure section (agent/departure.h) for a variant: the roles its DaemonSet is
placed by (none when raw nodeSelector/affinity place it: the chart cannot tell which role a pod
runs for), the roles whose agent serves metadata on a node, and the time to finish within the
pod's grace period. Call: include "okna.departure" (dict "root" $ "variant" v)
*/}}
{{- define "okna.departure" -}}
{{- $v := .root.Values -}}
{{- $roles := list -}}
{{- if not (or $v.placement.nodeSelector $v.placement.affinity) -}}
{{- range include "okna.placedRoles" .root | fromJsonArray -}}
{{- if or (eq $.variant "all") (eq (eq . "compute") (eq $.variant "compute")) -}}
{{- $roles = append $roles . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $metadataRoles := list -}}
{{- if $v.metadata.enabled -}}
{{- $metadataRoles = append $metadataRoles "compute" -}}
{{- if or (eq .variant "all") $v.metadata.onNetworkNodes -}}
{{- $metadataRoles = append $metadataRoles "network" -}}
{{- end -}}
{{- end -}}
{{- $timeout := max 1 (sub (int $v.terminationGracePeriodSeconds) 10) -}}
{{- toYaml (dict "roles" $roles "metadataRoles" $metadataRoles "timeoutSeconds" $timeout) -}}
{{- end -}}

/*
Copyright 2026 The ops-server Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package v1alpha1 holds the custom resources of ops-server in the API group
// ops.observability.tidbcloud.com: ClusterUpgradeOperation (upgrade a managed
// Kubernetes cluster and the VictoriaMetrics storage running on it),
// ClusterBackup (back up every vmstorage replica of a VMCluster),
// ClusterBackupSchedule (a ClusterBackup per cron tick, with retention),
// ClusterRestore (write a backup back into a VMCluster), VMClusterOperation
// (ordered Day-2 operations on a VMCluster) and ObservabilityStack (the
// declared observability stack, installed by Flux).
//
// The types are the contract between ops-apiserver, which creates the objects
// for REST clients, and ops-operator, which reconciles them. Every validation
// rule that the REST API applies to a request is also in the generated
// CustomResourceDefinition (OpenAPI schema and CEL x-kubernetes-validations),
// so that an object applied with kubectl or GitOps is held to the same rules;
// where the REST API needs a rule in Go to name the field at request time,
// its Go twin lives here next to the types (BackupDestinationProblem,
// FSDestinationProblem, the cloud name rules).
// The few defaults that a CRD cannot express (they depend on other fields)
// live in exactly one place, ClusterUpgradeOperationSpec.Default.
//
// +kubebuilder:object:generate=true
// +groupName=ops.observability.tidbcloud.com
package v1alpha1

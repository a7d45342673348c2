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

// Package apivalidation holds the integration tests of the ops-server CRDs:
// every validation rule of ClusterUpgradeOperation and ClusterBackup (OpenAPI
// schema and CEL x-kubernetes-validations) is exercised against a real
// kube-apiserver with the generated CRDs from crds/ installed, with at least
// one accepted and one rejected object per rule. It has no non-test code.
package apivalidation

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

package v1alpha1

// Flux sharding (docs/install.md, "Installing next to an existing Flux").
// ops-server's Flux controllers run with
// --watch-label-selector=sharding.fluxcd.io/key=<shard> and every Flux
// object ops-server creates (HelmRelease, HelmRepository, and the HelmChart
// through the HelmRelease's spec.chart.metadata.labels) carries the label;
// a Flux installed by the customer, run with the customary
// --watch-label-selector='!sharding.fluxcd.io/key', ignores them, and ours
// ignore everything else.
const (
	// FluxShardLabel is Flux's sharding label key.
	FluxShardLabel = "sharding.fluxcd.io/key"
	// DefaultFluxShard is the shard ops-server's Flux controllers watch
	// unless configured otherwise (chart value flux.shard).
	DefaultFluxShard = "ops-server"
)

// FluxShardLabels adds the shard label to l (a new map; l is not changed).
// An empty shard adds nothing: the controllers then watch everything.
func FluxShardLabels(shard string, l map[string]string) map[string]string {
	out := make(map[string]string, len(l)+1)
	for k, v := range l {
		out[k] = v
	}
	if shard != "" {
		out[FluxShardLabel] = shard
	}
	return out
}

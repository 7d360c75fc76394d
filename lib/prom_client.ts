/**
 * The three classes of prom-client that `lib/metrics.ts` uses, taken from its files rather than its
 * index: the index also loads its push gateway (`node:http`, `node:https`, `node:zlib`), its
 * cluster aggregator (`node:cluster`) and its default collectors (`node:fs`, `node:v8`,
 * `node:perf_hooks`), none of which svc uses, at every start (about 20 ms and 3 MB of the bundle's
 * cold start). The types are the index's own.
 */
import type * as PromClient from "prom-client";
import counter from "prom-client/lib/counter.js";
import gauge from "prom-client/lib/gauge.js";
import registry from "prom-client/lib/registry.js";

export const Counter = counter as typeof PromClient.Counter;
export type Counter<T extends string> = PromClient.Counter<T>;
export const Gauge = gauge as typeof PromClient.Gauge;
export type Gauge<T extends string> = PromClient.Gauge<T>;
export const Registry = registry as typeof PromClient.Registry;
export type Registry = PromClient.Registry;
export type Metric = PromClient.Metric;

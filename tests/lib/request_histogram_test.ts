/**
 * The request histogram writes, through prom-client's registry, the exposition prom-client's own
 * `Histogram` writes for the same observations: the same lines in the same order.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type * as PromClient from "prom-client";
import histogram from "prom-client/lib/histogram.js";
import { Registry } from "../../lib/prom_client.ts";
import { RequestHistogram } from "../../lib/request_histogram.ts";

const Histogram = histogram as typeof PromClient.Histogram;
const NAME = "svc_http_request_duration_seconds";
const HELP = "HTTP requests: a help text with a \\ and a\nnew line.";
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The two expositions of the same observations: prom-client's Histogram's, then ours. */
async function expositions(
  observations: { method: string; route: string; status: number; seconds: number }[],
) {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({
    name: NAME,
    help: HELP,
    labelNames: ["method", "route", "status"],
    buckets: BUCKETS,
    registers: [theirs],
  });
  const histogram = new RequestHistogram(NAME, HELP, BUCKETS, [ours]);
  for (const { method, route, status, seconds } of observations) {
    reference.observe({ method, route, status: String(status) }, seconds);
    histogram.observe(method, route, status, seconds);
  }
  return { theirs: await theirs.metrics(), ours: await ours.metrics(), histogram };
}

const observation = fc.record({
  method: fc.constantFrom("GET", "POST", "other"),
  route: fc.constantFrom("/1.1/users", "/svc/api/2.0/contact/personal", 'un"matched\\', "/x\ny"),
  status: fc.constantFrom(200, 204, 404, 500),
  // the bounds themselves, values between them, and beyond the last one
  seconds: fc.oneof(fc.constantFrom(0, ...BUCKETS), fc.double({ min: 0, max: 20, noNaN: true })),
});

Deno.test("the same exposition as prom-client's Histogram, for any observations", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
      const { theirs, ours } = await expositions(observations);
      assert.equal(ours, theirs);
    }),
    { numRuns: 300 },
  );
});

Deno.test("a series: its buckets cumulated, +Inf, sum and count; reset forgets it", async () => {
  const { ours, histogram } = await expositions([
    { method: "GET", route: "/health", status: 200, seconds: 0.0007 },
    { method: "GET", route: "/health", status: 200, seconds: 0.001 },
    { method: "GET", route: "/health", status: 200, seconds: 12 },
  ]);
  const labels = 'method="GET",route="/health",status="200"';
  const lines = ours.split("\n");
  assert.ok(lines.includes(`${NAME}_bucket{le="0.0005",${labels}} 0`));
  assert.ok(lines.includes(`${NAME}_bucket{le="0.001",${labels}} 2`));
  assert.ok(lines.includes(`${NAME}_bucket{le="10",${labels}} 2`));
  assert.ok(lines.includes(`${NAME}_bucket{le="+Inf",${labels}} 3`));
  assert.ok(lines.includes(`${NAME}_sum{${labels}} 12.0017`));
  assert.ok(lines.includes(`${NAME}_count{${labels}} 3`));
  histogram.reset();
  assert.deepEqual(histogram.get().values, []);
});

Deno.test("a duration that is not a finite number is refused, as prom-client refuses it", () => {
  const histogram = new RequestHistogram(NAME, HELP, BUCKETS, []);
  assert.throws(() => histogram.observe("GET", "/health", 200, NaN), TypeError);
  assert.throws(() => histogram.observe("GET", "/health", 200, Infinity), TypeError);
  assert.deepEqual(histogram.get().values, []);
});

/**
 * What tracing lost, counted in the process (read by the worker's metrics on each scrape):
 * spans dropped at the bounded queue, spans an export failed to deliver, and `traceparent`
 * values ignored as malformed.
 */
export const traceCounts = {
  /** Spans dropped because the export queue was full (a slow or unreachable collector). */
  dropped: 0,
  /** Spans the exporter could not deliver. */
  exportFailed: 0,
  /** `traceparent` values given with an input and ignored as malformed. */
  invalidTraceparent: 0,
};
